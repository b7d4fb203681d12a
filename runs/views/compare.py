"""The compare page: the two sides chosen in the query string, or the latest two."""

from __future__ import annotations

from django import forms
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET

from ..models import Iteration, Skill
from ..reading.compare import compare, condition_names


class CompareForm(forms.Form):
    a = forms.IntegerField(min_value=1)
    b = forms.IntegerField(min_value=1)
    ca = forms.CharField(required=False)
    cb = forms.CharField(required=False)


@require_GET
def compare_page(request: HttpRequest, skill: str) -> HttpResponse:
    found = Skill.objects.get_by_name_or_404(skill)
    form = CompareForm(request.GET or None)
    comparison = None
    if form.is_bound and form.is_valid():
        comparison = _comparison(found, **form.cleaned_data)
    elif not form.is_bound and (latest := _latest_two(found)):
        return redirect(latest)
    context = {
        "skill": found,
        "iterations": Iteration.objects.filter(skill=found).light().in_display_order(),
        "conditions": SimpleLazyObject(lambda: condition_names(found)),
        "form": form,
        "comparison": comparison,
    }
    return render(request, "runs/compare.html", context)


def _latest_two(skill: Skill) -> str:
    """No choice yet: the latest iteration against the one before, at an address that says
    so (a teammate opening the link sees the same comparison); "" with fewer than two."""
    latest = skill.iterations.order_by("-position", "-number").values_list("number", flat=True)[:2]
    if len(latest) < 2:
        return ""
    # reverse(), not request.path: the path arrives decoded ("a?b#c" for a%3Fb%23c).
    address = reverse("runs:compare", args=[skill.name])
    return f"{address}?a={latest[1]}&b={latest[0]}"


def _comparison(skill: Skill, *, a: int, b: int, ca: str, cb: str) -> SimpleLazyObject:
    """The comparison asked for, computed when first read; 404 for what does not exist."""
    before = Iteration.objects.get_by_number_or_404(skill, a)
    after = Iteration.objects.get_by_number_or_404(skill, b)
    for iteration, name in ((before, ca), (after, cb)):
        if name and not iteration.conditions.filter(name=name).exists():
            raise Http404(f"Iteration #{iteration.number} has no condition “{name}”.")
    return SimpleLazyObject(
        lambda: compare(before, after, before_condition=ca or None, after_condition=cb or None)
    )
