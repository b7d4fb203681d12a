"""The compare page for three or more iterations (`?iterations=3,5,7`), served at the
compare page's address so a share link of a comparison works for either.

The skill page's "Compare selected" form sends `iterations=3&iterations=5&…`: two go to
the two-iteration page, more to the one canonical address (numbers in display order,
comma-separated), which is what a share link of the comparison holds.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.functional import SimpleLazyObject

from ..models import Iteration, Skill
from ..reading.compare import DIRECTIONS
from ..reading.compare_many import (
    MANY_FIRST_ROWS,
    ChoiceRefused,
    choose_iterations,
    compare_many,
    many_table,
    sort_keys,
)
from .htmx import wants_fragment

#: Query keys that arrange the table, kept when the address is made canonical.
ARRANGING = ("sort", "show", "rows")


class ManyTableForm(forms.Form):
    """How the per-eval table is shown: sorted, filtered by direction, all rows or the first."""

    sort = forms.ChoiceField(required=False)
    show = forms.ChoiceField(required=False, choices=[(d, d) for d in DIRECTIONS])
    rows = forms.ChoiceField(required=False, choices=[("all", "all rows")])

    def __init__(self, data: object, numbers: list[int]) -> None:
        super().__init__(data)
        keys = sort_keys(numbers)
        self.fields["sort"].choices = [(k, k) for key in keys for k in (key, f"-{key}")]

    def state(self) -> dict[str, object]:
        """many_table's keywords as asked; the defaults when the query is not valid."""
        if not self.is_valid():
            return {"sort": "eval", "show": "", "limit": MANY_FIRST_ROWS}
        data = self.cleaned_data
        limit = None if data["rows"] == "all" else MANY_FIRST_ROWS
        return {"sort": data["sort"] or "eval", "show": data["show"], "limit": limit}


def compare_many_page(request: HttpRequest, skill: Skill) -> HttpResponse:
    """The page for `?iterations=…`; `compare_page` hands it every request that has one."""
    given = request.GET.getlist("iterations")
    context: dict[str, object] = {
        "skill": skill,
        "all_iterations": Iteration.objects.filter(skill=skill).light().in_display_order(),
    }
    try:
        iterations = choose_iterations(skill, given)
    except ChoiceRefused as refused:
        context |= {"error": str(refused), "chosen": _chosen_numbers(given)}
        status = 404 if refused.missing else 400
        return render(request, "runs/compare_many.html", context, status=status)
    numbers = [iteration.number for iteration in iterations]
    kept = [(key, request.GET[key]) for key in ARRANGING if request.GET.get(key)]
    if len(iterations) == 2:
        # Two: the two-iteration page (its sort keys are not these; show and rows are).
        query = urlencode(
            [("a", numbers[0]), ("b", numbers[1]), *(p for p in kept if p[0] != "sort")]
        )
        return redirect(f"{reverse('runs:compare', args=[skill.name])}?{query}")
    canonical = ",".join(map(str, numbers))
    if given != [canonical]:
        query = urlencode([("iterations", canonical), *kept], safe=",")
        return redirect(f"{reverse('runs:compare', args=[skill.name])}?{query}")
    state = ManyTableForm(request.GET, numbers).state()
    comparison = SimpleLazyObject(lambda: compare_many(iterations))
    context |= {
        "iterations": iterations,
        "chosen": numbers,
        "comparison": comparison,
        "table": SimpleLazyObject(lambda: many_table(comparison, **state)),
        "sort": state["sort"],
    }
    template_name = "runs/compare_many.html"
    if wants_fragment(request):
        template_name += "#many-table"
    return render(request, template_name, context)


def _chosen_numbers(given: list[str]) -> set[int]:
    """The numbers of a refused choice that read as numbers, to keep them ticked."""
    parts = (part.strip() for value in given for part in value.split(","))
    return {int(part) for part in parts if part.isdigit() and len(part) <= 9}
