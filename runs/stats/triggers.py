"""Trigger-eval statistics (SPEC §3.5): does a description make the agent load its skill?

The unit is the query, not the run: the runs of one query share its wording, so every
interval treats queries as clusters (a ratio estimator with the cluster-robust standard error
`mean_interval` computes, each query weighted by its runs). A query that recorded a rate but
no run counts weighs one run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .intervals import Estimate, Interval, mean_interval, wilson_interval
from .scores import PairedDelta, paired_delta

#: skill-creator's rule: a should-trigger query passes at a rate ≥ this, another below it.
DEFAULT_THRESHOLD = 0.5
RATE_BOUNDS = (0.0, 1.0)
#: What a routing run loaded when it loaded no skill.
NONE = "none"


@dataclass(frozen=True)
class QueryOutcome:
    """One query's results: `triggers` of `runs` loaded the skill under test.

    `runs` is None where the result recorded only a rate (`rate`). `errors` are runs that
    timed out or failed: they are neither triggers nor misses, and are not in `runs`.
    `loaded` counts, with siblings staged, which skill each run loaded (NONE for none).
    """

    query: str
    should_trigger: bool
    triggers: int | None = None
    runs: int | None = None
    rate: float | None = None
    errors: int = 0
    split: str = ""
    expected: str = ""
    loaded: Mapping[str, int] | None = None

    @classmethod
    def of(cls, row: Any) -> QueryOutcome:
        """The outcome of a query row as stored or parsed (a TriggerQuery, a ParsedQuery):
        anything with these attributes, `expected_skill` for `expected`."""
        return cls(
            row.query,
            row.should_trigger,
            triggers=row.triggers,
            runs=row.runs,
            rate=row.rate,
            errors=row.errors,
            split=row.split,
            expected=row.expected_skill,
            loaded=row.loaded,
        )

    @property
    def trigger_rate(self) -> float | None:
        """Triggers over runs, else the rate recorded; None when neither is known."""
        if self.runs:
            return (self.triggers or 0) / self.runs
        return self.rate

    @property
    def weight(self) -> float:
        """How many runs the query's rate rests on (1 when only a rate was recorded)."""
        return float(self.runs) if self.runs else 1.0

    def interval(self, *, confidence: float = 0.95) -> Interval | None:
        """The Wilson interval of the trigger rate, where run counts are known."""
        if not self.runs:
            return None
        return wilson_interval(self.triggers or 0, self.runs, confidence=confidence)

    def passed(self, threshold: float = DEFAULT_THRESHOLD) -> bool | None:
        """skill-creator's verdict: rate ≥ threshold when the skill should load, < otherwise."""
        rate = self.trigger_rate
        if rate is None:
            return None
        return rate >= threshold if self.should_trigger else rate < threshold

    @property
    def correct_rate(self) -> float | None:
        """The share of runs that did the right thing: loaded when it should, else not."""
        rate = self.trigger_rate
        if rate is None:
            return None
        return rate if self.should_trigger else 1.0 - rate


@dataclass(frozen=True)
class TriggerSummary:
    """A description's figures over a set of queries, each an Estimate clustered by query.

    `recall`: the trigger rate over should-trigger queries; `false_trigger_rate`: over
    should-not queries; `precision`, `f1` and `accuracy` over runs, as skill-creator computes
    them, with query-clustered intervals. Each is None where its denominator is empty.
    """

    queries: int
    passed: int
    scored: int
    recall: Estimate | None
    false_trigger_rate: Estimate | None
    precision: Estimate | None
    f1: Estimate | None
    accuracy: Estimate | None
    errors: int


def _ratio(pairs: Iterable[tuple[float, float]]) -> Estimate | None:
    """Σ numerator / Σ denominator over queries, with a query-clustered interval."""
    kept = [(top, bottom) for top, bottom in pairs if bottom > 0]
    if not kept:
        return None
    return mean_interval(
        [top / bottom for top, bottom in kept], [bottom for _, bottom in kept], bounds=RATE_BOUNDS
    )


def _counts(outcome: QueryOutcome) -> tuple[float, float]:
    """(triggers, runs) of a query, a recorded rate standing for one run."""
    rate = outcome.trigger_rate
    if outcome.runs:
        return float(outcome.triggers or 0), float(outcome.runs)
    return (rate, 1.0) if rate is not None else (0.0, 0.0)


def summarise(
    outcomes: Sequence[QueryOutcome], *, threshold: float = DEFAULT_THRESHOLD
) -> TriggerSummary:
    """The figures of one description over `outcomes` (one split, or all of them)."""
    verdicts = [outcome.passed(threshold) for outcome in outcomes]
    positive = [o for o in outcomes if o.should_trigger]
    negative = [o for o in outcomes if not o.should_trigger]
    true_pos = {id(o): _counts(o) for o in positive}
    false_pos = {id(o): _counts(o) for o in negative}
    return TriggerSummary(
        queries=len(outcomes),
        passed=sum(1 for v in verdicts if v),
        scored=sum(1 for v in verdicts if v is not None),
        recall=_ratio(true_pos.values()),
        false_trigger_rate=_ratio(false_pos.values()),
        # Precision: of the runs that loaded the skill, those where it should have.
        precision=_ratio(
            [(t, t) for t, _ in true_pos.values()] + [(0.0, f) for f, _ in false_pos.values()]
        ),
        # F1 = 2TP / (2TP + FP + FN), per query: a should-trigger query adds 2TP and its
        # misses, a should-not query its false triggers.
        f1=_ratio(
            [(2 * t, 2 * t + (n - t)) for t, n in true_pos.values()]
            + [(0.0, f) for f, _ in false_pos.values()]
        ),
        accuracy=_ratio(
            [(t, n) for t, n in true_pos.values()] + [(n - f, n) for f, n in false_pos.values()]
        ),
        errors=sum(o.errors for o in outcomes),
    )


def compare_descriptions(
    before: Sequence[QueryOutcome], after: Sequence[QueryOutcome]
) -> PairedDelta | None:
    """after − before in each shared query's share of correct runs, paired by query text,
    with the sign-flip permutation p over queries (as eval deltas are paired by eval)."""
    return paired_delta(
        _correct_by_query(after),
        _correct_by_query(before),
        treatment="after",
        control="before",
        weights=None,
    )


def _correct_by_query(outcomes: Sequence[QueryOutcome]) -> dict[str, float]:
    return {o.query: rate for o in outcomes if (rate := o.correct_rate) is not None}


@dataclass(frozen=True)
class Flip:
    """A query whose verdict changed between two descriptions."""

    query: str
    should_trigger: bool
    before: float
    after: float
    fixed: bool


def flipped_queries(
    before: Sequence[QueryOutcome],
    after: Sequence[QueryOutcome],
    *,
    threshold: float = DEFAULT_THRESHOLD,
) -> list[Flip]:
    """The shared queries that pass under one description and fail under the other."""
    earlier = {o.query: o for o in before}
    flips = []
    for outcome in after:
        old = earlier.get(outcome.query)
        if old is None or outcome.trigger_rate is None or old.trigger_rate is None:
            continue
        was, now = old.passed(threshold), outcome.passed(threshold)
        if was != now:
            flips.append(
                Flip(
                    outcome.query,
                    outcome.should_trigger,
                    old.trigger_rate,
                    outcome.trigger_rate,
                    bool(now),
                )
            )
    return flips


def confusion(outcomes: Iterable[QueryOutcome]) -> dict[tuple[str, str], int]:
    """Runs by (skill expected, skill loaded), NONE for none, for outcomes that recorded which
    skill each run loaded (routing among siblings)."""
    cells: Counter[tuple[str, str]] = Counter()
    for outcome in outcomes:
        for loaded, count in (outcome.loaded or {}).items():
            cells[(outcome.expected or NONE, loaded)] += count
    return dict(cells)


def broken_harness(outcomes: Sequence[QueryOutcome]) -> str | None:
    """Why these results look like a runner that could not trigger anything, else None.

    skill-creator's older runner registered the description as a slash command and counted
    a timeout as "not triggered": no query ever triggers, precision 100 %, recall 0 %.
    """
    measured = [o for o in outcomes if o.runs or o.rate is not None or o.errors]
    if not measured:
        return None
    if all(o.errors and not o.runs for o in measured):
        return "every run timed out or failed: the agent never finished a turn"
    if any(o.should_trigger for o in measured) and not any(
        (o.trigger_rate or 0) > 0 for o in measured
    ):
        return (
            "no query ever loaded the skill, not even those that should: the runner may not "
            "have staged it as a skill (a .claude/commands/ file is a slash command) or "
            "counted timeouts as misses"
        )
    return None
