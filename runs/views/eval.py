"""An eval's page (its summary and runs by condition) and two of its runs diffed side by side."""

from __future__ import annotations

from django import forms
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET

from ..models import Iteration, Run
from ..names import findable
from ..reading.eval import RUNS_FIRST, eval_runs, side_by_side


class EvalRunsForm(forms.Form):
    """`runs=all` shows every run of each condition; by default the first RUNS_FIRST."""

    runs = forms.ChoiceField(required=False, choices=[("", "first runs"), ("all", "all runs")])

    def show_all(self) -> bool:
        return self.is_valid() and self.cleaned_data["runs"] == "all"


@require_GET
def eval_page(request: HttpRequest, skill: str, number: int, eval_id: str) -> HttpResponse:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    if not (findable(eval_id) and iteration.runs.filter(eval_id=eval_id).exists()):
        raise Http404(
            f"Iteration #{iteration.number} of {iteration.skill.name} has no eval “{eval_id}”."
        )
    show_all = EvalRunsForm(request.GET).show_all()
    context = {
        "skill": iteration.skill,
        "iteration": iteration,
        "eval_id": eval_id,
        "eval_name": iteration.eval_name(eval_id),
        "show_all": show_all,
        "runs_first": RUNS_FIRST,
        # Read when first used: a cached page reads none of it.
        "page": SimpleLazyObject(
            lambda: eval_runs(iteration, eval_id, limit=None if show_all else RUNS_FIRST)
        ),
    }
    return render(request, "runs/eval.html", context)


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
    left, right = _chosen_runs(request, skill, iteration, eval_id)
    left_patch, right_patch = (run.artifacts.get("diff_patch") or "" for run in (left, right))
    context = {
        "skill": iteration.skill,
        "iteration": iteration,
        "eval_id": eval_id,
        "eval_name": left.eval_name,
        "left": left,
        "right": right,
        "final": side_by_side(left.final_message, right.final_message),
        "patch": side_by_side(left_patch, right_patch),
        "has_patch": bool(left_patch or right_patch),
    }
    return render(request, "runs/diff.html", context)


def _chosen_runs(
    request: HttpRequest, skill: str, iteration: Iteration, eval_id: str
) -> tuple[Run, Run]:
    """The two runs the query string names (DiffForm); 404 for a bad or forbidden choice."""
    form = DiffForm(request.GET)
    if not form.is_valid():
        errors = "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())
        raise Http404(f"Choose two runs to compare ({errors}).")
    (ca, ra), (cb, rb) = form.cleaned_data["a"], form.cleaned_data["b"]
    other = form.cleaned_data["ib"] or iteration.number
    link = getattr(request, "share_link", None)
    if other != iteration.number and link is not None:
        # The other iteration's run must lie inside the share too: a skill's link opens
        # every iteration of the skill, an iteration's or an eval's link only its own.
        other_eval = {"skill": skill, "number": other, "eval_id": eval_id}
        if not link.covers("eval", other_eval, {}):
            raise Http404(f"This shared view does not open iteration #{other}.")
    left = Run.objects.get_by_address_or_404(skill, iteration.number, eval_id, ca, ra)
    right = Run.objects.get_by_address_or_404(skill, other, eval_id, cb, rb)
    return left, right
