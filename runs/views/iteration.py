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
    LIST_FIRST_ITEMS,
    MATRIX_FIRST_ROWS,
    iteration_detail,
    reviews_of,
    runs_of_cell,
)
from .htmx import wants_fragment


class IterationFilterForm(forms.Form):
    tag = forms.CharField(required=False)
    only = forms.MultipleChoiceField(
        required=False,
        choices=[
            ("failures", "only failures"),
            ("flaky", "only flaky"),
            ("changed", "only changed vs previous"),
        ],
        widget=forms.CheckboxSelectMultiple,
    )
    #: "all": the whole matrix; by default the first MATRIX_FIRST_ROWS rows and a count.
    rows = forms.ChoiceField(required=False, choices=[("", "first rows"), ("all", "all rows")])

    def filters(self) -> dict[str, Any]:
        """The matrix filters asked for; none when the query string is not valid."""
        if not self.is_valid():
            return {"tag": "", "only": set()}
        return {"tag": self.cleaned_data["tag"], "only": set(self.cleaned_data["only"])}

    def limit(self) -> int | None:
        """How many matrix rows to show: None for all of them."""
        show_all = self.is_valid() and self.cleaned_data["rows"] == "all"
        return None if show_all else MATRIX_FIRST_ROWS


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
        "matrix": SimpleLazyObject(lambda: detail.matrix(**form.filters(), limit=form.limit())),
        "list_limit": LIST_FIRST_ITEMS,
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
