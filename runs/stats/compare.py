"""Iteration vs iteration: per-eval changes with intervals, flipped assertions, significance
badges after a Holm–Bonferroni correction, and warnings when the two sides are not alike.

Sides are matched by role, not by condition name, so a new-skill iteration (with_skill /
without_skill) compares with a revision one (new_skill / old_skill).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from .assertions import AssertionTally, assertion_tallies
from .intervals import Estimate, holm_adjust, two_sample_permutation_p_value, welch_interval
from .rows import OutcomeRow, Role, RunRow, as_run_samples
from .scores import DELTA_BOUNDS, PairedDelta, paired_delta

Badge = Literal["improved", "regressed"]


@dataclass(frozen=True)
class IterationRuns:
    """One side of a comparison: its label, which conditions play which role, its rows."""

    label: str
    treatment: str
    control: str | None
    runs: Sequence[RunRow]
    outcomes: Sequence[OutcomeRow] = ()


@dataclass(frozen=True)
class EvalChange:
    """How one eval moved from `before` to `after` (every change is after − before).

    `treatment_change` is the difference of the treatment's mean run pass rates with a Welch
    interval over runs (needs 2 runs a side); `delta_change` the same for treatment −
    control. `p_value` is the two-sample permutation p of the treatment change,
    `adjusted_p` its Holm-adjusted value across the compared evals, and `badge` is set when
    adjusted_p < alpha.
    """

    eval_id: str
    treatment_before: float | None
    treatment_after: float | None
    treatment_change: Estimate | None
    delta_before: float | None
    delta_after: float | None
    delta_change: Estimate | None
    p_value: float | None
    adjusted_p: float | None
    badge: Badge | None


@dataclass(frozen=True)
class AssertionFlip:
    """An assertion whose status (always passes / always fails / flaky) changed in one role."""

    eval_id: str
    assertion_id: str
    role: Role
    before: AssertionTally
    after: AssertionTally

    @property
    def direction(self) -> Literal["fixed", "broke"]:
        """Return "fixed" when its pass rate went up, "broke" when it went down."""
        return "fixed" if self.after.rate > self.before.rate else "broke"


@dataclass(frozen=True)
class IterationComparison:
    """Everything the Compare page shows for two iterations of a skill."""

    before_label: str
    after_label: str
    evals: list[EvalChange]
    treatment_change: PairedDelta | None
    delta_change: PairedDelta | None
    flips: list[AssertionFlip] = field(default_factory=list)


RatesByCell = dict[tuple[str, str], list[float]]


def _pass_rates(side: IterationRuns) -> RatesByCell:
    """Return (eval id, condition) → graded pass rates, for the side's two conditions only."""
    rates: RatesByCell = defaultdict(list)
    for run in as_run_samples(side.runs):
        if run.pass_rate is not None and run.condition in (side.treatment, side.control):
            rates[(run.eval_id, run.condition)].append(run.pass_rate)
    return rates


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _eval_change(
    eval_id: str,
    before: IterationRuns,
    after: IterationRuns,
    rates: tuple[RatesByCell, RatesByCell],
) -> EvalChange:
    t0 = rates[0].get((eval_id, before.treatment), [])
    t1 = rates[1].get((eval_id, after.treatment), [])
    c0 = rates[0].get((eval_id, before.control), []) if before.control else []
    c1 = rates[1].get((eval_id, after.control), []) if after.control else []
    m_t0, m_t1, m_c0, m_c1 = _mean(t0), _mean(t1), _mean(c0), _mean(c1)
    d0 = m_t0 - m_c0 if m_t0 is not None and m_c0 is not None else None
    d1 = m_t1 - m_c1 if m_t1 is not None and m_c1 is not None else None
    return EvalChange(
        eval_id=eval_id,
        treatment_before=m_t0,
        treatment_after=m_t1,
        treatment_change=welch_interval([t1], [t0], bounds=DELTA_BOUNDS),
        delta_before=d0,
        delta_after=d1,
        delta_change=welch_interval([t1, c0], [t0, c1], bounds=(-2.0, 2.0)),
        p_value=two_sample_permutation_p_value(t0, t1),
        adjusted_p=None,
        badge=None,
    )


def _with_badges(changes: list[EvalChange], alpha: float) -> list[EvalChange]:
    # Holm over the evals that could be tested: one family per comparison.
    tested = [i for i, c in enumerate(changes) if c.p_value is not None]
    adjusted = holm_adjust([p for c in changes if (p := c.p_value) is not None])
    result = list(changes)
    for i, p in zip(tested, adjusted, strict=True):
        change = changes[i].treatment_change
        badge: Badge | None = None
        if p < alpha and change is not None and change.value != 0:
            badge = "improved" if change.value > 0 else "regressed"
        result[i] = replace(changes[i], adjusted_p=p, badge=badge)
    return result


def flipped_assertions(before: IterationRuns, after: IterationRuns) -> list[AssertionFlip]:
    """Return assertions seen in one role on both sides whose pass/fail/flaky status changed."""

    def by_role(side: IterationRuns) -> dict[tuple[str, str, Role], AssertionTally]:
        roles: dict[str, Role] = {side.treatment: Role.TREATMENT}
        if side.control:
            roles[side.control] = Role.CONTROL
        return {
            (t.eval_id, t.assertion_id, roles[t.condition]): t
            for t in assertion_tallies(side.outcomes)
            if t.condition in roles
        }

    def status(tally: AssertionTally) -> str:
        return "pass" if tally.rate == 1.0 else "fail" if tally.rate == 0.0 else "flaky"

    old, new = by_role(before), by_role(after)
    flips = []
    for key in sorted(old.keys() & new.keys()):
        if status(old[key]) != status(new[key]):
            eval_id, assertion_id, role = key
            flips.append(AssertionFlip(eval_id, assertion_id, role, old[key], new[key]))
    return flips


def compare_iterations(
    before: IterationRuns,
    after: IterationRuns,
    *,
    weights: Mapping[str, float] | None = None,
    alpha: float = 0.05,
) -> IterationComparison:
    """Return the per-eval changes, overall paired changes and flips from before to after.

    Overall changes pair evals across the iterations: `treatment_change` is the paired
    delta of after's vs before's per-eval treatment scores, `delta_change` that of their
    per-eval treatment − control deltas (None without a control on either side).
    """
    rates = (_pass_rates(before), _pass_rates(after))
    eval_ids = sorted({e for side in rates for (e, _) in side})
    changes = _with_badges([_eval_change(e, before, after, rates) for e in eval_ids], alpha)
    treatment_before = {
        c.eval_id: c.treatment_before for c in changes if c.treatment_before is not None
    }
    treatment_after = {
        c.eval_id: c.treatment_after for c in changes if c.treatment_after is not None
    }
    deltas_before = {c.eval_id: c.delta_before for c in changes if c.delta_before is not None}
    deltas_after = {c.eval_id: c.delta_after for c in changes if c.delta_after is not None}
    treatment_change = paired_delta(
        treatment_after,
        treatment_before,
        treatment=after.label,
        control=before.label,
        weights=weights,
    )
    # A change of delta ranges over [-2, 2], not [-1, 1].
    delta_change = paired_delta(
        deltas_after,
        deltas_before,
        treatment=after.label,
        control=before.label,
        weights=weights,
        bounds=(-2.0, 2.0),
    )
    return IterationComparison(
        before.label,
        after.label,
        changes,
        treatment_change,
        delta_change,
        flipped_assertions(before, after),
    )


@dataclass(frozen=True)
class IterationProfile:
    """What must match for two iterations to be comparable, as plain values."""

    label: str
    eval_fingerprints: Mapping[str, str] = field(default_factory=dict)
    assertion_ids: Mapping[str, Collection[str]] = field(default_factory=dict)
    agent_model: str | None = None
    judge_model: str | None = None
    harness: str | None = None
    mode: str | None = None


@dataclass(frozen=True)
class SettingDifference:
    """A setting of the run (agent model, judge model, harness, mode) that differs."""

    setting: str
    before: str
    after: str

    def __str__(self) -> str:
        return f"{self.setting} {self.before} → {self.after}"


def setting_differences(
    before: IterationProfile, after: IterationProfile
) -> list[SettingDifference]:
    """Return the settings that differ: agent model, judge model, harness, mode, in that order.

    Settings unknown on either side (None) are not compared.
    """
    return [
        SettingDifference(name, x, y)
        for name, x, y in (
            ("agent model", before.agent_model, after.agent_model),
            ("judge model", before.judge_model, after.judge_model),
            ("harness", before.harness, after.harness),
            ("mode", before.mode, after.mode),
        )
        if x is not None and y is not None and x != y
    ]


def _names(items: Collection[str]) -> str:
    return ", ".join(sorted(items))


def comparison_warnings(
    before: IterationProfile, after: IterationProfile, *, settings: bool = True
) -> list[str]:
    """Return one sentence per way the two iterations differ beyond their results.

    Covers evals present on one side only, changed eval definitions (fingerprints), changed
    assertion id sets, and (unless `settings` is False: the compare page's headline names
    them) differing agent model, judge model, harness or mode; see `setting_differences`.
    """
    warnings: list[str] = []
    a, b = before.label, after.label
    for side, only in (
        (a, before.eval_fingerprints.keys() - after.eval_fingerprints.keys()),
        (b, after.eval_fingerprints.keys() - before.eval_fingerprints.keys()),
    ):
        if only:
            warnings.append(f"Evals only in {side}: {_names(only)}.")
    changed = [
        e
        for e in before.eval_fingerprints.keys() & after.eval_fingerprints.keys()
        if before.eval_fingerprints[e] != after.eval_fingerprints[e]
    ]
    if changed:
        warnings.append(f"Eval definitions changed between {a} and {b}: {_names(changed)}.")
    for eval_id in sorted(before.assertion_ids.keys() & after.assertion_ids.keys()):
        old, new = set(before.assertion_ids[eval_id]), set(after.assertion_ids[eval_id])
        if old == new:
            continue
        parts = [f"added {_names(new - old)}"] if new - old else []
        parts += [f"removed {_names(old - new)}"] if old - new else []
        warnings.append(f"Assertions of {eval_id} changed: {'; '.join(parts)}.")
    if settings:
        for difference in setting_differences(before, after):
            name = difference.setting.capitalize()
            warnings.append(
                f"{name} differs: {difference.before} in {a}, {difference.after} in {b}."
            )
    return warnings
