"""Assertion analysis of one iteration: flaky assertions and treatment/control contrasts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from .rows import OutcomeRow, as_assertion_outcomes


class AssertionClass(StrEnum):
    """How an assertion behaves across the two arms of an iteration.

    With r_T and r_C its pass rates over the runs of the treatment and the control:
    ALWAYS_PASS     r_T = 1 and r_C = 1 — not discriminating, a candidate to replace;
    ALWAYS_FAIL     r_T = 0 and r_C = 0 — investigate the eval or the assertion;
    TREATMENT_ONLY  r_T = 1 and r_C = 0 — passes only with the skill: where its value is;
    CONTROL_ONLY    r_T = 0 and r_C = 1 — passes only without it: the skill hurts;
    MIXED           any other pair of rates (flaky in an arm, or partly passing);
    UNPAIRED        observed in one arm only, so there is nothing to contrast.
    """

    ALWAYS_PASS = "always_pass"
    ALWAYS_FAIL = "always_fail"
    TREATMENT_ONLY = "treatment_only"
    CONTROL_ONLY = "control_only"
    MIXED = "mixed"
    UNPAIRED = "unpaired"


@dataclass(frozen=True)
class AssertionTally:
    """Passes out of runs for one assertion of one eval in one condition."""

    condition: str
    eval_id: str
    assertion_id: str
    passed: int
    runs: int

    @property
    def rate(self) -> float:
        """Return the share of runs in which the assertion passed."""
        return self.passed / self.runs

    @property
    def flaky(self) -> bool:
        """Return whether it passed in some runs and failed in others."""
        return 0 < self.passed < self.runs


@dataclass(frozen=True)
class AssertionContrast:
    """One assertion of one eval, its pass rates in both arms and its class."""

    eval_id: str
    assertion_id: str
    treatment: AssertionTally | None
    control: AssertionTally | None
    category: AssertionClass


def assertion_tallies(outcomes: Iterable[OutcomeRow]) -> list[AssertionTally]:
    """Return passes/runs per (condition, eval, assertion), sorted by those keys."""
    counts: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for o in as_assertion_outcomes(outcomes):
        tally = counts[(o.condition, o.eval_id, o.assertion_id)]
        tally[0] += o.passed
        tally[1] += 1
    return [AssertionTally(*key, passed, runs) for key, (passed, runs) in sorted(counts.items())]


def flaky_assertions(outcomes: Iterable[OutcomeRow]) -> list[AssertionTally]:
    """Return the assertions that passed in some runs and failed in others, per condition."""
    return [t for t in assertion_tallies(outcomes) if t.flaky]


def _category(treatment: AssertionTally | None, control: AssertionTally | None) -> AssertionClass:
    if treatment is None or control is None:
        return AssertionClass.UNPAIRED
    rates = (treatment.rate, control.rate)
    return {
        (1.0, 1.0): AssertionClass.ALWAYS_PASS,
        (0.0, 0.0): AssertionClass.ALWAYS_FAIL,
        (1.0, 0.0): AssertionClass.TREATMENT_ONLY,
        (0.0, 1.0): AssertionClass.CONTROL_ONLY,
    }.get(rates, AssertionClass.MIXED)


def classify_assertions(
    outcomes: Iterable[OutcomeRow], *, treatment: str, control: str
) -> list[AssertionContrast]:
    """Return every assertion seen in either arm with its AssertionClass, by eval and id."""
    return classify_tallies(assertion_tallies(outcomes), treatment=treatment, control=control)


def classify_tallies(
    tallies: Iterable[AssertionTally], *, treatment: str, control: str
) -> list[AssertionContrast]:
    """`classify_assertions` from `assertion_tallies` already counted, to count only once."""
    cells: dict[tuple[str, str], dict[str, AssertionTally]] = defaultdict(dict)
    for tally in tallies:
        if tally.condition in (treatment, control):
            cells[(tally.eval_id, tally.assertion_id)][tally.condition] = tally
    contrasts = []
    for (eval_id, assertion_id), arms in sorted(cells.items()):
        t, c = arms.get(treatment), arms.get(control)
        contrasts.append(AssertionContrast(eval_id, assertion_id, t, c, _category(t, c)))
    return contrasts


def assertion_classes(
    outcomes: Iterable[OutcomeRow], *, treatment: str, control: str
) -> dict[AssertionClass, list[AssertionContrast]]:
    """Return the contrasts grouped by class, every class present (possibly empty)."""
    return classes_of_tallies(assertion_tallies(outcomes), treatment=treatment, control=control)


def classes_of_tallies(
    tallies: Iterable[AssertionTally], *, treatment: str, control: str
) -> dict[AssertionClass, list[AssertionContrast]]:
    """`assertion_classes` from `assertion_tallies` already counted, to count only once."""
    groups: dict[AssertionClass, list[AssertionContrast]] = {k: [] for k in AssertionClass}
    for contrast in classify_tallies(tallies, treatment=treatment, control=control):
        groups[contrast.category].append(contrast)
    return groups
