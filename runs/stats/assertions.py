"""Assertion analysis of one iteration: flaky assertions and treatment/control contrasts.

Flakiness is ranked, not just detected: with 10 runs per eval almost every assertion of a big
iteration fails once, so "it flipped" says nothing. An assertion's `flakiness` is how surely
its outcome goes either way; a page badges only the flakiest few whose rarer outcome is common
enough to matter (`notably_flaky`, `most_flaky`), and lists the rest ranked below them.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from .intervals import wilson_interval
from .rows import AssertionOutcome, OutcomeRow

#: A flaky assertion is notable when its rarer outcome (pass or fail) comes in at least this
#: share of its runs: 1 run in 4 — 1 of 3 is, 1 of 5 is not.
NOTABLE_FLAKY_SHARE = 0.25
#: How many of an iteration's notable flaky assertions a page badges: the flakiest.
FLAKY_BADGES = 10


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

    @property
    def rarer_share(self) -> float:
        """The share of runs with its rarer outcome: 0 when it never flipped, 0.5 at most."""
        return min(self.passed, self.runs - self.passed) / self.runs if self.runs else 0.0

    @property
    def flakiness(self) -> float:
        """How surely it goes either way: the low end of the Wilson 95% interval of its rarer
        outcome's share. It grows as the pass rate nears one half and as runs add up: 1 of 3
        gives 0.06, 2 of 4 gives 0.15, 5 of 10 gives 0.24; 0 when it never flipped."""
        if not self.flaky:
            return 0.0
        return _flakiness(min(self.passed, self.runs - self.passed), self.runs)

    @property
    def notably_flaky(self) -> bool:
        """Flaky, and its rarer outcome comes in at least NOTABLE_FLAKY_SHARE of its runs."""
        return self.flaky and self.rarer_share >= NOTABLE_FLAKY_SHARE


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
    # Mappings read as they come: a comparison counts thousands, and building an
    # AssertionOutcome for each was most of the count.
    for o in outcomes:
        if isinstance(o, AssertionOutcome):
            key, passed = (o.condition, o.eval_id, o.assertion_id), o.passed
        else:
            key, passed = (o["condition"], o["eval_id"], o["assertion_id"]), o["passed"]
        tally = counts[key]
        tally[0] += passed
        tally[1] += 1
    return [AssertionTally(*key, passed, runs) for key, (passed, runs) in sorted(counts.items())]


def flaky_assertions(outcomes: Iterable[OutcomeRow]) -> list[AssertionTally]:
    """Return the assertions that passed in some runs and failed in others, per condition."""
    return [t for t in assertion_tallies(outcomes) if t.flaky]


@functools.lru_cache(maxsize=4096)
def _flakiness(rarer: int, runs: int) -> float:
    # A 300-eval iteration ranks 3,000 flaky tallies of a few dozen distinct (rarer, runs).
    interval = wilson_interval(rarer, runs)
    return interval.low if interval else 0.0


def rank_flaky(tallies: Iterable[AssertionTally]) -> list[AssertionTally]:
    """Return the flaky tallies, flakiest first: the notable ones before the rest, each by
    flakiness, then by runs (more first); ties keep the order they came in."""
    flaky = [t for t in tallies if t.flaky]
    return sorted(flaky, key=lambda t: (not t.notably_flaky, -t.flakiness, -t.runs))


def most_flaky(ranked: Iterable[AssertionTally], limit: int = FLAKY_BADGES) -> list[AssertionTally]:
    """Return the first `limit` notable tallies of a `rank_flaky` ranking: those to badge."""
    return [t for t in ranked if t.notably_flaky][:limit]


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
