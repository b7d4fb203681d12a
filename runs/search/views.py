"""The search pages: one box per skill, one over every skill; `?q=` makes either shareable."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from runs.models import Condition, Iteration, Skill

from .forms import SearchForm
from .searching import PAGE_SIZE, search
from .triggers import trigger_queries


@require_GET
@vary_on_headers("HX-Request")
def site_search(request: HttpRequest) -> HttpResponse:
    return _search_page(request, skill=None)


@require_GET
@vary_on_headers("HX-Request")
def skill_search(request: HttpRequest, skill: str) -> HttpResponse:
    return _search_page(request, skill=Skill.objects.get_by_name_or_404(skill))


def _search_page(request: HttpRequest, *, skill: Skill | None) -> HttpResponse:
    form = SearchForm(request.GET or None, skill=skill)
    results, previous_page, next_page, triggers = None, "", "", []
    if form.is_valid() and form.cleaned_data["q"] is not None:
        filters = form.filters()
        results = search(form.cleaned_data["q"], filters, offset=form.offset(), limit=PAGE_SIZE)
        # On the first page only, and only where no run-only filter applies.
        page_one = (form.cleaned_data.get("page") or 1) == 1
        if page_one and not (filters.iteration_number or filters.condition or filters.outcome):
            triggers = trigger_queries(form.cleaned_data["q"], skill_id=filters.skill_id)
        page = form.cleaned_data.get("page") or 1
        previous_page = _page(request, page - 1) if page > 1 else ""
        next_page = _page(request, page + 1) if results.count > form.offset() + PAGE_SIZE else ""
    conditions = (
        Condition.objects.all()
        if skill is None
        else Condition.objects.filter(iteration__skill=skill)
    )
    numbers = Iteration.objects.filter(skill=skill).in_display_order()
    context = {
        "skill": skill,
        "form": form,
        "results": results,
        "trigger_hits": triggers,
        "page": (form.cleaned_data.get("page") or 1) if form.is_valid() else 1,
        "page_size": PAGE_SIZE,
        "previous_page": previous_page,
        "next_page": next_page,
        "conditions": sorted(set(conditions.values_list("name", flat=True))),
        "iterations": numbers.values_list("number", flat=True) if skill else [],
    }
    template_name = "search/search.html"
    if request.htmx:
        template_name += "#results"
    return render(request, template_name, context)


def _page(request: HttpRequest, page: int) -> str:
    """This search's address at another page."""
    query = request.GET.copy()
    query["page"] = str(page)
    return f"?{query.urlencode()}"
