"""An iteration's page, its matrix fragment, its full assertion lists, the runs of one
matrix cell and its benchmark.json."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from ..models import Iteration
from ..names import findable
from ..reading.benchmark import eval_magic_benchmark
from ..reading.iteration import (
    DEFAULT_SORT,
    LIST_FIRST_ITEMS,
    MATRIX_PAGE_ROWS,
    MOVEMENTS,
    iteration_detail,
    reviews_of,
    runs_of_cell,
)
from .htmx import wants_fragment


class IterationFilterForm(forms.Form):
    """The matrix's state in the query string; a value it cannot read counts as not given."""

    tag = forms.CharField(required=False)
    only = forms.MultipleChoiceField(
        required=False,
        choices=[("failures", "only failures"), ("flaky", "only flaky")],
        widget=forms.CheckboxSelectMultiple,
    )
    #: improved, regressed, unchanged or new since the previous iteration (treatment score).
    change = forms.ChoiceField(required=False, choices=[(m, m) for m in ("", *MOVEMENTS)])
    #: "eval", "delta", "change" or "score:<condition>", '-' first for descending; the
    #: matrix falls back to DEFAULT_SORT for one it does not have.
    sort = forms.CharField(required=False, max_length=200)
    page = forms.IntegerField(required=False, min_value=1)
    #: "all": the whole matrix; by default pages of MATRIX_PAGE_ROWS rows.
    rows = forms.ChoiceField(required=False, choices=[("", "a page"), ("all", "all rows")])

    def matrix_options(self) -> dict[str, Any]:
        """IterationDetail.matrix's keyword arguments, from the fields that are valid."""
        self.is_valid()
        data = self.cleaned_data
        return {
            "tag": data.get("tag") or "",
            "only": set(data.get("only") or ()),
            "movement": data.get("change") or "",
            "sort": data.get("sort") or DEFAULT_SORT,
            "page": data.get("page") or 1,
            "paged": data.get("rows") != "all",
        }


@require_GET
@vary_on_headers("HX-Request")
def iteration_page(request: HttpRequest, skill: str, number: int) -> HttpResponse:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    form = IterationFilterForm(request.GET)
    detail = SimpleLazyObject(lambda: iteration_detail(iteration))
    template_name = "runs/iteration.html"
    if wants_fragment(request):
        template_name += "#matrix"
    context = {
        "skill": iteration.skill,
        "iteration": iteration,
        "form": form,
        "detail": detail,
        "matrix": SimpleLazyObject(lambda: detail.matrix(**form.matrix_options())),
        "list_limit": LIST_FIRST_ITEMS,
        "page_rows": MATRIX_PAGE_ROWS,
        "reviews": SimpleLazyObject(lambda: reviews_of(iteration)),
    }
    return render(request, template_name, context)


@require_GET
@vary_on_headers("HX-Request")
def iteration_list(request: HttpRequest, skill: str, number: int, kind: str) -> HttpResponse:
    """An iteration's assertion classes or flaky assertions in full: a page, or (htmx) the
    list alone, which the iteration page's "all N" link loads in place of its first few."""
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    template_name = f"runs/_{kind}.html" if wants_fragment(request) else "runs/iteration_list.html"
    context = {
        "skill": iteration.skill,
        "iteration": iteration,
        "kind": kind,
        "detail": SimpleLazyObject(lambda: iteration_detail(iteration)),
        "limit": None,
    }
    return render(request, template_name, context)


@require_GET
@vary_on_headers("HX-Request")
def cell_page(
    request: HttpRequest, skill: str, number: int, eval_id: str, condition: str
) -> HttpResponse:
    """One matrix cell's runs with their verdicts and evidence: a table row htmx inserts
    under the matrix row, or (without htmx) a page of its own."""
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    runs = runs_of_cell(iteration, eval_id, condition)
    if not (findable(eval_id) and findable(condition) and runs):
        raise Http404(f"Iteration #{number} of {skill} has no runs of “{eval_id}” in {condition}.")
    context = {
        "skill": iteration.skill,
        "iteration": iteration,
        "eval_id": eval_id,
        "eval_name": runs[0].eval_name,
        "condition": condition,
        "runs": runs,
        "columns": iteration.conditions.count() + 3,  # the matrix row's width
    }
    template_name = "runs/cell.html#cell-row" if request.htmx else "runs/cell.html"
    return render(request, template_name, context)


@require_GET
def benchmark_json(request: HttpRequest, skill: str, number: int) -> JsonResponse:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    try:
        data = eval_magic_benchmark(iteration)
    except ValueError as exc:
        raise Http404(str(exc)) from None
    return JsonResponse(data, json_dumps_params={"indent": 2, "ensure_ascii": False})
