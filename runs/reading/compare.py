"""The compare page: two iterations of a skill (or two conditions of one) side by side."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import stats
from ..models import Condition, EvalCase, Iteration, Skill
from .samples import assertion_outcomes, run_samples
from .summaries import IterationSummary, summarise_iterations


@dataclass
class Comparison:
    """Two iterations of a skill (or two conditions of one) side by side."""

    before: Iteration
    after: Iteration
    before_side: stats.IterationRuns
    after_side: stats.IterationRuns
    result: stats.IterationComparison
    warnings: list[str]
    #: eval id → what a person reads (skill-creator's `eval_name`), where it differs.
    names: dict[str, str] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return stats.delta_verdict(
            self.result.treatment_change,
            treatment=self.after_side.label,
            control=self.before_side.label,
        )


def compare(
    before: Iteration,
    after: Iteration,
    *,
    before_condition: str | None = None,
    after_condition: str | None = None,
) -> Comparison:
    """Compare two iterations (treatment and delta), or one condition with another.

    Without conditions each side is its iteration's treatment and control. With them, each
    side is that condition alone (e.g. with_skill against without_skill of one iteration),
    and there is no delta to compare.
    """
    summaries = summarise_iterations([before, after])
    same = before.pk == after.pk
    b = _side(
        before,
        summaries[before.pk],
        before_condition,
        before_condition if same and before_condition else f"#{before.number}",
    )
    a = _side(
        after,
        summaries[after.pk],
        after_condition,
        after_condition if same and after_condition else f"#{after.number}",
    )
    weights = dict(after.runs.order_by().values_list("eval_id", "eval_case__weight").distinct())
    result = stats.compare_iterations(b, a, weights=weights)
    warnings = []
    if not same:
        warnings = stats.comparison_warnings(
            _profile(before, b.outcomes), _profile(after, a.outcomes)
        )
    names = dict(
        EvalCase.objects.filter(runs__iteration__in=[before, after])
        .exclude(name="")
        .order_by("created_at")
        .values_list("eval_id", "name")
    )
    return Comparison(before, after, b, a, result, warnings, names)


def condition_names(skill: Skill) -> list[str]:
    """Every condition name the skill's iterations ran, for the page's condition choices."""
    names = Condition.objects.filter(iteration__skill=skill).values_list("name", flat=True)
    return sorted(set(names))


def _side(
    iteration: Iteration, summary: IterationSummary, condition: str | None, label: str
) -> stats.IterationRuns:
    if condition:
        treatment, control = condition, None
    else:
        first = summary.treatment or (summary.conditions[0] if summary.conditions else None)
        treatment = first.name if first else ""
        control = summary.control.name if summary.control else None
    return stats.IterationRuns(
        label=label,
        treatment=treatment,
        control=control,
        runs=run_samples(iteration),
        outcomes=assertion_outcomes([iteration]),
    )


def _profile(iteration: Iteration, outcomes: Sequence[Any]) -> stats.IterationProfile:
    fingerprints = dict(
        iteration.runs.order_by().values_list("eval_id", "eval_case__fingerprint").distinct()
    )
    assertion_ids: dict[str, set[str]] = defaultdict(set)
    for outcome in outcomes:
        assertion_ids[outcome["eval_id"]].add(outcome["assertion_id"])
    return stats.IterationProfile(
        label=f"#{iteration.number}",
        eval_fingerprints=fingerprints,
        assertion_ids=assertion_ids,
        agent_model=iteration.agent_model or None,
        judge_model=iteration.judge_model or None,
        harness=iteration.harness or None,
        mode=iteration.mode,
    )
