"""Human review: notes and overrides posted from a run's page, and the needs-review queue."""

from __future__ import annotations

from django import forms
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from runs.models import LOW_CONFIDENCE, AssertionResult, Run, Skill

from .reviewing import ReviewError, add_note, override


class NoteForm(forms.Form):
    text = forms.CharField(max_length=10_000)


class OverrideForm(forms.Form):
    verdict = forms.ChoiceField(choices=[("pass", "PASS"), ("fail", "FAIL")])
    reason = forms.CharField(max_length=10_000)


def _refused(request: HttpRequest, message: str, back: str) -> HttpResponse:
    return render(request, "grading/refused.html", {"message": message, "back": back}, status=400)


def _form_error(form: forms.Form) -> str:
    return "; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items())


@require_POST
def note(
    request: HttpRequest, skill: str, number: int, eval_id: str, condition: str, run: int
) -> HttpResponse:
    found = Run.objects.get_by_address_or_404(skill, number, eval_id, condition, run)
    back = found.get_absolute_url()
    form = NoteForm(request.POST)
    if not form.is_valid():
        return _refused(request, _form_error(form), back)
    try:
        add_note(run=found, author=request.user, text=form.cleaned_data["text"])
    except ReviewError as exc:
        return _refused(request, str(exc), back)
    return redirect(f"{back}#reviews-{found.pk}")


@require_POST
def override_result(
    request: HttpRequest,
    skill: str,
    number: int,
    eval_id: str,
    condition: str,
    run: int,
    result: int,
) -> HttpResponse:
    found = Run.objects.get_by_address_or_404(skill, number, eval_id, condition, run)
    target = get_object_or_404(AssertionResult, pk=result, grading__run=found)
    back = found.get_absolute_url()
    form = OverrideForm(request.POST)
    if not form.is_valid():
        return _refused(request, _form_error(form), back)
    try:
        override(
            result=target,
            author=request.user,
            passed=form.cleaned_data["verdict"] == "pass",
            reason=form.cleaned_data["reason"],
        )
    except ReviewError as exc:
        return _refused(request, str(exc), back)
    return redirect(f"{back}#result-{target.pk}")


@require_GET
def review_queue(request: HttpRequest, skill: str) -> HttpResponse:
    """Judge results below the confidence threshold across the skill, newest iteration first."""
    found = Skill.objects.get_by_name_or_404(skill)
    results = (
        AssertionResult.objects.filter(
            grading__run__iteration__skill=found, confidence__lt=LOW_CONFIDENCE, is_meta=False
        )
        .select_related("grading__run__iteration", "grading__run__condition")
        .annotate(review_count=Count("overrides"))
        .order_by("-grading__run__iteration__position", "grading__run__eval_id", "grading__run_id")
    )
    page = Paginator(results, 50).get_page(request.GET.get("page"))
    return render(request, "grading/queue.html", {"skill": found, "page": page})
