"""A skill's page: its trend charts and iterations, and its Triggering panel."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from ..models import Skill
from ..reading.axes import combination_count
from ..reading.skill import DEFAULT_ITERATION_SORT, ITERATION_SORTS, skill_trends, sort_summaries
from ..reading.triggers import trigger_panel
from .htmx import wants_fragment

SORTS = [(key, key) for name in ITERATION_SORTS for key in (name, f"-{name}")]


class IterationTableForm(forms.Form):
    sort = forms.ChoiceField(required=False, choices=SORTS)

    def sort_asked(self) -> str:
        """The iteration table's order; newest first when none (or none it has) is asked."""
        return (self.is_valid() and self.cleaned_data["sort"]) or DEFAULT_ITERATION_SORT


@require_GET
@vary_on_headers("HX-Request")
def skill_page(request: HttpRequest, skill: str) -> HttpResponse:
    found = Skill.objects.get_by_name_or_404(skill)
    sort = IterationTableForm(request.GET).sort_asked()
    trends = SimpleLazyObject(lambda: skill_trends(found))
    template_name = "runs/skill.html"
    if wants_fragment(request):
        template_name += "#iteration-table"
    context = {
        "skill": found,
        "iterations": found.iterations.count(),
        "trigger_iterations": found.trigger_iterations.count(),
        "trends": trends,
        "sort": sort,
        "iteration_rows": SimpleLazyObject(lambda: sort_summaries(trends.summaries, sort)),
        "triggers": SimpleLazyObject(lambda: trigger_panel(found)),
        # Read only where the trends' cached region is drawn.
        "combinations": SimpleLazyObject(lambda: combination_count(found)),
    }
    return render(request, template_name, context)
