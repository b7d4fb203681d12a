"""Trigger evals: one trigger iteration's page, and two descriptions compared."""

from __future__ import annotations

from django import forms
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET

from ..models import Skill, TriggerIteration
from ..reading.triggers import compare_trigger_iterations, trigger_iteration_page


class TriggerCompareForm(forms.Form):
    a = forms.IntegerField(min_value=1)
    b = forms.IntegerField(min_value=1)


@require_GET
def trigger_page(request: HttpRequest, skill: str, number: int) -> HttpResponse:
    iteration = TriggerIteration.objects.get_by_address_or_404(skill, number)
    context = {
        "skill": iteration.skill,
        "trigger": iteration,
        "page": SimpleLazyObject(lambda: trigger_iteration_page(iteration)),
    }
    return render(request, "runs/trigger.html", context)


@require_GET
def trigger_compare_page(request: HttpRequest, skill: str) -> HttpResponse:
    found = Skill.objects.get_by_name_or_404(skill)
    form = TriggerCompareForm(request.GET or None)
    comparison = None
    if not form.is_bound and (latest := _latest_two(found)):
        return redirect(latest)
    if form.is_bound:
        if not form.is_valid():
            raise Http404("Name the two trigger iterations to compare by number: ?a=1&b=2.")
        before = TriggerIteration.objects.get_by_number_or_404(found, form.cleaned_data["a"])
        after = TriggerIteration.objects.get_by_number_or_404(found, form.cleaned_data["b"])
        comparison = SimpleLazyObject(lambda: compare_trigger_iterations(before, after))
    context = {
        "skill": found,
        "iterations": found.trigger_iterations.order_by("number").only("number", "label"),
        "form": form,
        "comparison": comparison,
    }
    return render(request, "runs/trigger_compare.html", context)


def _latest_two(skill: Skill) -> str:
    """No choice yet: the latest description against the one before, at an address that
    says so; "" with fewer than two."""
    latest = skill.trigger_iterations.order_by("-number").values_list("number", flat=True)[:2]
    if len(latest) < 2:
        return ""
    address = reverse("runs:trigger-compare", args=[skill.name])
    return f"{address}?a={latest[1]}&b={latest[0]}"
