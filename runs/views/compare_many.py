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
    MAX_ITERATIONS,
    compare_many,
    many_table,
    sort_keys,
)
from .htmx import wants_fragment

#: Query keys that arrange the table, kept when the address is made canonical.
ARRANGING = ("sort", "show", "rows")


class ChosenIterations(forms.Form):
    """The iterations asked for: numbers separated by commas (or the key repeated)."""

    iterations = forms.CharField(
        error_messages={"required": "Choose at least two iterations to compare."}
    )

    def __init__(self, skill: Skill, numbers: list[str]) -> None:
        super().__init__({"iterations": ",".join(numbers)})
        self.skill = skill

    def clean_iterations(self) -> list[Iteration]:
        """The iterations, in display order; one line saying what is wrong otherwise."""
        numbers: dict[int, None] = {}
        for part in self.cleaned_data["iterations"].split(","):
            text = part.strip()
            if not text:
                continue
            if not text.isdigit() or len(text) > 9:
                shown = text if len(text) <= 20 else text[:20] + "…"
                raise forms.ValidationError(f"“{shown}” is not an iteration number.")
            numbers[int(text)] = None
        if len(numbers) < 2:
            raise forms.ValidationError("Choose at least two iterations to compare.")
        if len(numbers) > MAX_ITERATIONS:
            raise forms.ValidationError(
                f"Choose at most {MAX_ITERATIONS} iterations to compare ({len(numbers)} chosen)."
            )
        found = list(
            Iteration.objects.filter(skill=self.skill, number__in=numbers)
            .light()
            .in_display_order()
        )
        missing = sorted(set(numbers) - {iteration.number for iteration in found})
        if missing:
            listed = ", ".join(f"#{number}" for number in missing)
            plural = "s" if len(missing) > 1 else ""
            raise forms.ValidationError(
                f"{self.skill.name} has no iteration{plural} {listed}.", code="missing"
            )
        return found


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
    form = ChosenIterations(skill, given)
    context: dict[str, object] = {
        "skill": skill,
        "all_iterations": Iteration.objects.filter(skill=skill).light().in_display_order(),
    }
    if not form.is_valid():
        error = form.errors["iterations"].as_data()[0]
        context |= {"error": error.messages[0], "chosen": _chosen_numbers(given)}
        status = 404 if error.code == "missing" else 400
        return render(request, "runs/compare_many.html", context, status=status)
    iterations = form.cleaned_data["iterations"]
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
        "directions": DIRECTIONS,
    }
    template_name = "runs/compare_many.html"
    if wants_fragment(request):
        template_name += "#many-table"
    return render(request, template_name, context)


def _chosen_numbers(given: list[str]) -> set[int]:
    """The numbers of a refused choice that read as numbers, to keep them ticked."""
    parts = (part.strip() for value in given for part in value.split(","))
    return {int(part) for part in parts if part.isdigit() and len(part) <= 9}
