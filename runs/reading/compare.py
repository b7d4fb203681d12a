"""The compare page: two iterations of a skill (or two conditions of one) side by side.

`compare` computes the comparison (statistics in `runs.stats`); `compare_table` orders,
filters and cuts its per-eval rows for the page, each row knowing which runs to diff.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from .. import stats
from ..models import Condition, EvalCase, Iteration, Run, Skill
from ..names import natural_key
from ..roles import Role
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
    headline: stats.CompareHeadline
    #: The warnings but those on settings (models, harness, mode): the headline names them.
    data_warnings: list[str]
    #: eval id → what a person reads (skill-creator's `eval_name`), where it differs.
    names: dict[str, str] = field(default_factory=dict)
    #: Each iteration's own treatment − control delta, as its page shows it.
    deltas: tuple[stats.PairedDelta | None, stats.PairedDelta | None] = (None, None)

    @property
    def verdict(self) -> str:
        """The sentence on the treatment's change (of the conditions', for two conditions)."""
        return self.headline.treatment_change.sentence

    @property
    def same_iteration(self) -> bool:
        return self.before.pk == self.after.pk

    @property
    def diff_ib(self) -> int | None:
        """The diff page's `ib` (after's iteration) for runs of two iterations; None for one."""
        return None if self.same_iteration else self.after.number

    @property
    def power_note(self) -> str:
        """Why the headline's change cannot be significant with this few evals, if it cannot."""
        headline = self.headline
        change = headline.delta_change if headline.delta_comparable else headline.treatment_change
        return stats.power_note(change.delta) if change is not None else ""


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
    before_cases = _eval_cases(before)
    after_cases = before_cases if same else _eval_cases(after)
    return _assemble(
        ComparedIteration(before, summaries[before.pk], b, before_cases),
        ComparedIteration(after, summaries[after.pk], a, after_cases),
        two_conditions=bool(before_condition and after_condition),
    )


@dataclass(frozen=True)
class ComparedIteration:
    """One side of a comparison as read: the iteration, its summary, its runs (treatment
    and control) and the definitions they ran."""

    iteration: Iteration
    summary: IterationSummary
    side: stats.IterationRuns
    cases: list[_EvalCaseRow]


def read_for_comparison(iterations: Sequence[Iteration]) -> list[ComparedIteration]:
    """Each iteration read once as a side (its treatment against its control), in order,
    so that any pair of them compares with `compare_read` without reading again."""
    summaries = summarise_iterations(iterations)
    return [
        ComparedIteration(
            iteration,
            summaries[iteration.pk],
            _side(iteration, summaries[iteration.pk], None, f"#{iteration.number}"),
            _eval_cases(iteration),
        )
        for iteration in iterations
    ]


def compare_read(before: ComparedIteration, after: ComparedIteration) -> Comparison:
    """Two iterations read by `read_for_comparison` compared: what `compare` gives for them."""
    return _assemble(before, after, two_conditions=False)


def _assemble(
    before_read: ComparedIteration, after_read: ComparedIteration, *, two_conditions: bool
) -> Comparison:
    before, after = before_read.iteration, after_read.iteration
    b, a = before_read.side, after_read.side
    same = before.pk == after.pk
    weights = {case.eval_id: case.weight for case in after_read.cases}
    result = stats.compare_iterations(b, a, weights=weights)
    warnings: list[str] = []
    profiles = None
    if not same:
        profiles = (
            _profile(before, before_read.cases, b.outcomes),
            _profile(after, after_read.cases, a.outcomes),
        )
        warnings = stats.comparison_warnings(*profiles)
    headline = stats.compare_headline(
        b,
        a,
        result,
        # Two conditions have no delta; a delta beside a single condition is no comparison.
        profiles=None if two_conditions else profiles,
        differences=stats.setting_differences(*profiles) if profiles else (),
    )
    # Where two definitions of an eval differ in name, the one made last is read.
    named = sorted(
        (case for case in {*before_read.cases, *after_read.cases} if case.name),
        key=lambda case: (case.created_at, case.pk),
    )
    names = {case.eval_id: case.name for case in named}
    data_warnings = stats.comparison_warnings(*profiles, settings=False) if profiles else []
    deltas = (before_read.summary.delta, after_read.summary.delta)
    return Comparison(before, after, b, a, result, warnings, headline, data_warnings, names, deltas)


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
    runs = run_samples(iteration)
    return stats.IterationRuns(
        label=label,
        treatment=treatment,
        control=control,
        runs=runs,
        outcomes=assertion_outcomes([iteration], runs),
    )


class _EvalCaseRow(NamedTuple):
    pk: int
    eval_id: str
    weight: float
    fingerprint: str
    name: str
    created_at: datetime


def _eval_cases(iteration: Iteration) -> list[_EvalCaseRow]:
    """The definitions the iteration's runs ran: each read once (a join from its runs read
    every run's row, conversations and all, to find sixty definitions)."""
    ran = Run.objects.filter(iteration=iteration).values("eval_case_id")
    rows = EvalCase.objects.filter(pk__in=ran).order_by().values_list(*_EvalCaseRow._fields)
    return [_EvalCaseRow(*row) for row in rows]


def _profile(
    iteration: Iteration, cases: Sequence[_EvalCaseRow], outcomes: Sequence[Any]
) -> stats.IterationProfile:
    fingerprints = {case.eval_id: case.fingerprint for case in cases}
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


Direction = Literal["improved", "regressed", "unchanged", "one-side"]
#: The filters, in the order the page offers them: by the treatment score's change.
DIRECTIONS: tuple[Direction, ...] = ("improved", "regressed", "unchanged", "one-side")
#: Sort keys of the per-eval table; "-key" sorts descending.
SORT_KEYS = ("eval", "before", "after", "change", "delta_before", "delta_after", "delta", "p")
#: Rows shown before "show all": a 60-eval comparison is otherwise a page too long to read.
COMPARE_FIRST_ROWS = 25


@dataclass(frozen=True)
class FlipRow:
    """A flipped assertion and the two runs to diff: one before that had its old verdict,
    one after that has its new one, each as the diff page's "<condition>/<run>"."""

    flip: stats.AssertionFlip
    before_run: str
    after_run: str


@dataclass(frozen=True)
class CompareRow:
    """One eval of the comparison: its change, the runs to diff, its flipped assertions."""

    change: stats.EvalChange
    name: str
    direction: Direction
    #: The diff page's "<condition>/<run>" for the first treatment run of each side ("" if none).
    before_run: str
    after_run: str
    flips: list[FlipRow]

    @property
    def eval_id(self) -> str:
        return self.change.eval_id

    @property
    def fixed(self) -> int:
        return sum(1 for f in self.flips if f.flip.direction == "fixed")

    @property
    def broke(self) -> int:
        return len(self.flips) - self.fixed


#: A table's row type: CompareRow here, compare_many's ManyRow there.
Row = TypeVar("Row")


@dataclass
class ShownRows(Generic[Row]):
    """Rows a comparison table shows: filtered by direction, sorted, the first few; the
    counts are per direction, before the filter."""

    rows: list[Row]
    matching: list[Row]
    counts: dict[str, int]
    sort: str
    show: str

    @property
    def total(self) -> int:
        """Rows passing the filter (shown or not)."""
        return len(self.matching)

    @property
    def hidden(self) -> int:
        return self.total - len(self.rows)

    @property
    def all_rows(self) -> int:
        return sum(self.counts.values())


@dataclass
class CompareTable(ShownRows[CompareRow]):
    """The per-eval rows the two-iteration page shows."""

    @property
    def with_flips(self) -> list[CompareRow]:
        """The rows passing the filter that have flipped assertions, in the table's order."""
        return [row for row in self.matching if row.flips]

    @property
    def flip_count(self) -> int:
        return sum(len(row.flips) for row in self.matching)


def _direction(change: stats.EvalChange) -> Direction:
    if change.treatment_before is None or change.treatment_after is None:
        return "one-side"
    moved = change.treatment_after - change.treatment_before
    if math.isclose(moved, 0.0, abs_tol=1e-9):
        return "unchanged"
    return "improved" if moved > 0 else "regressed"


def _first_runs(side: stats.IterationRuns) -> dict[str, str]:
    """eval id → "<treatment>/<lowest run index>" of the side's treatment runs."""
    first: dict[str, int] = {}
    for run in side.runs:  # `run_samples` rows: plain dicts, read as they come
        if run["condition"] == side.treatment:
            eval_id, index = run["eval_id"], run["run_index"]
            first[eval_id] = min(first.get(eval_id, index), index)
    return {eval_id: f"{side.treatment}/{index}" for eval_id, index in first.items()}


def _verdict_runs(side: stats.IterationRuns) -> dict[tuple[str, str, str, bool], int]:
    """(eval, condition, assertion, passed) → the lowest run index with that verdict."""
    runs: dict[tuple[str, str, str, bool], int] = {}
    for o in side.outcomes:  # `assertion_outcomes` rows: thousands, so no conversion
        key = (o["eval_id"], o["condition"], o["assertion_id"], bool(o["passed"]))
        index = o["run_index"]
        runs[key] = min(runs.get(key, index), index)
    return runs


def _flip_rows(comparison: Comparison) -> dict[str, list[FlipRow]]:
    before, after = comparison.before_side, comparison.after_side
    found = (_verdict_runs(before), _verdict_runs(after))
    rows: dict[str, list[FlipRow]] = defaultdict(list)
    for flip in comparison.result.flips:
        sides = (before, after)
        conditions = [
            side.treatment if flip.role == Role.TREATMENT else (side.control or "")
            for side in sides
        ]
        # Broke: a run before that passed, one after that failed; fixed: the other way round.
        verdicts = (True, False) if flip.direction == "broke" else (False, True)
        choices = []
        for runs, condition, passed in zip(found, conditions, verdicts, strict=True):
            index = runs.get((flip.eval_id, condition, flip.assertion_id, passed))
            if index is None:
                index = runs.get((flip.eval_id, condition, flip.assertion_id, not passed), 1)
            choices.append(f"{condition}/{index}")
        rows[flip.eval_id].append(FlipRow(flip, *choices))
    return rows


def compare_rows(comparison: Comparison) -> list[CompareRow]:
    """Every eval of the comparison as a row, in natural order of eval ids."""
    before_runs = _first_runs(comparison.before_side)
    after_runs = _first_runs(comparison.after_side)
    flips = _flip_rows(comparison)
    rows = [
        CompareRow(
            change=change,
            name=comparison.names.get(change.eval_id) or change.eval_id,
            direction=_direction(change),
            before_run=before_runs.get(change.eval_id, ""),
            after_run=after_runs.get(change.eval_id, ""),
            flips=flips.get(change.eval_id, []),
        )
        for change in comparison.result.evals
    ]
    return sorted(rows, key=lambda row: natural_key(row.eval_id))


def _sort_value(row: CompareRow, key: str) -> Any:
    change = row.change
    estimate = {"change": change.treatment_change, "delta": change.delta_change}.get(key)
    return {
        "eval": natural_key(row.eval_id),
        "before": change.treatment_before,
        "after": change.treatment_after,
        "change": estimate.value if estimate else None,
        "delta_before": change.delta_before,
        "delta_after": change.delta_after,
        "delta": estimate.value if estimate else None,
        "p": change.adjusted_p,
    }[key]


def compare_table(
    comparison: Comparison,
    *,
    sort: str = "eval",
    show: str = "",
    limit: int | None = COMPARE_FIRST_ROWS,
) -> CompareTable:
    """The rows the page shows: those moving in the `show` direction (every one for ""),
    sorted by `sort` ("-" first for descending; rows without the value last either way),
    the first `limit` of them (all for None). Ties keep the natural order of eval ids."""
    rows = compare_rows(comparison)
    counts = {direction: 0 for direction in DIRECTIONS}
    for row in rows:
        counts[row.direction] += 1
    matching = [row for row in rows if not show or row.direction == show]
    key = sort.lstrip("-") or "eval"
    present = [row for row in matching if _sort_value(row, key) is not None]
    missing = [row for row in matching if _sort_value(row, key) is None]
    present.sort(key=lambda row: _sort_value(row, key), reverse=sort.startswith("-"))
    ordered = present + missing
    shown = ordered if limit is None else ordered[:limit]
    return CompareTable(shown, ordered, counts, sort or "eval", show)
