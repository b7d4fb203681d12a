"""The overview: every skill, filtered and sorted through the query string."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from ..models import Skill
from ..reading.overview import skill_rows, sort_rows
from .htmx import wants_fragment

SORTS = ("name", "-name", "delta", "-delta", "updated", "-updated", "warnings", "-warnings")


class OverviewForm(forms.Form):
    q = forms.CharField(required=False)
    sort = forms.ChoiceField(required=False, choices=[(k, k) for k in SORTS])

    def choice(self) -> tuple[str, str]:
        """(query, sort) as asked; the defaults when the query string is not valid."""
        if not self.is_valid():
            return "", "-updated"
        return self.cleaned_data["q"], self.cleaned_data["sort"] or "-updated"


@require_GET
@vary_on_headers("HX-Request")
def overview(request: HttpRequest) -> HttpResponse:
    form = OverviewForm(request.GET)
    query, sort = form.choice()
    template_name = "runs/overview.html"
    if wants_fragment(request):
        template_name += "#skill-table"
    context = {
        "form": form,
        "query": query,
        "sort": sort,
        "rows": SimpleLazyObject(lambda: sort_rows(skill_rows(query=query), sort)),
        "any_skills": Skill.objects.exists(),
    }
    return render(request, template_name, context)
