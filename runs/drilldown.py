"""Digging into a matrix cell without leaving the iteration page, and two runs side by side.

`cell_runs`: one eval × condition's runs, each assertion's verdict and evidence and the
final message: a table row htmx inserts under the matrix row (the whole page without htmx).
`run_diff`: any two runs of an eval (two conditions, or one condition in two iterations),
their final messages and their diff.patch compared line by line.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from django import forms
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from .models import Iteration, Run
from .names import findable

#: Texts longer than this are compared by their head (difflib is quadratic on changed runs).
MAX_DIFF_LINES = 4_000


@require_GET
@vary_on_headers("HX-Request")
def cell_runs(
    request: HttpRequest, skill: str, number: int, eval_id: str, condition: str
) -> HttpResponse:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    runs = list(iteration.runs.for_eval_page(eval_id).filter(condition__name=condition))
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
    template_name = "runs/cell.html"
    if request.htmx:
        template_name += "#cell-row"
    return render(request, template_name, context)


@dataclass(frozen=True)
class Line:
    """One row of a side-by-side diff: "equal", "replace", "delete" or "insert"."""

    tag: str
    left: str | None
    right: str | None
    left_number: int | None
    right_number: int | None


def side_by_side(before: str, after: str) -> list[Line]:
    """Two texts line by line: unchanged lines once on each side, changes paired."""
    a = before.splitlines()[:MAX_DIFF_LINES]
    b = after.splitlines()[:MAX_DIFF_LINES]
    rows: list[Line] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            rows.append(
                Line(
                    tag=tag,
                    left=a[i] if i < i2 else None,
                    right=b[j] if j < j2 else None,
                    left_number=i + 1 if i < i2 else None,
                    right_number=j + 1 if j < j2 else None,
                )
            )
    return rows


class DiffForm(forms.Form):
    """The two runs: `a` and `b` as "<condition>/<run>", `ib` the iteration of b (this one
    by default)."""

    a = forms.CharField(max_length=300)
    b = forms.CharField(max_length=300)
    ib = forms.IntegerField(required=False, min_value=1, max_value=2**31 - 1)

    def clean_a(self) -> tuple[str, int]:
        return _run_choice(self.cleaned_data["a"])

    def clean_b(self) -> tuple[str, int]:
        return _run_choice(self.cleaned_data["b"])


def _run_choice(value: str) -> tuple[str, int]:
    condition, _, index = value.rpartition("/")
    if not condition or not index.isdigit():
        raise forms.ValidationError(f"“{value}” is not <condition>/<run>, e.g. with_skill/1.")
    return condition, int(index)


@require_GET
def run_diff(request: HttpRequest, skill: str, number: int, eval_id: str) -> HttpResponse:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    form = DiffForm(request.GET)
    if not form.is_valid():
        errors = "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())
        raise Http404(f"Choose two runs to compare ({errors}).")
    (ca, ra), (cb, rb) = form.cleaned_data["a"], form.cleaned_data["b"]
    other = form.cleaned_data["ib"] or iteration.number
    if other != iteration.number and getattr(request, "share_link", None) is not None:
        # A share link opens this iteration's views only, never another iteration's run.
        raise Http404("A shared view compares runs of its own iteration only.")
    left = Run.objects.get_by_address_or_404(skill, iteration.number, eval_id, ca, ra)
    right = Run.objects.get_by_address_or_404(skill, other, eval_id, cb, rb)
    context = {
        "skill": iteration.skill,
        "iteration": iteration,
        "eval_id": eval_id,
        "eval_name": left.eval_name,
        "left": left,
        "right": right,
        "final": side_by_side(left.final_message, right.final_message),
        "patch": side_by_side(
            left.artifacts.get("diff_patch") or "", right.artifacts.get("diff_patch") or ""
        ),
        "has_patch": bool(left.artifacts.get("diff_patch") or right.artifacts.get("diff_patch")),
    }
    return render(request, "runs/diff.html", context)
