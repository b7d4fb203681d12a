"""The compare page for three or more iterations of one skill, side by side.

Columns are the iterations in display order (`Iteration.position`). Each eval's row holds
its treatment score in every column and the change from the first column; each column has
its own treatment − control delta; between neighbouring columns stand the verdicts of the
two-iteration compare page, computed by it (`compare_read`), so the two pages never
disagree. Each iteration is read once, however many pairs it is part of.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from .. import stats
from ..models import IssuedNumber, Iteration, NumberMoved, Skill
from ..names import natural_key
from .compare import (
    COMPARE_FIRST_ROWS,
    DIRECTIONS,
    ComparedIteration,
    Comparison,
    Direction,
    ShownRows,
    compare_read,
    read_for_comparison,
)

#: The most iterations one page compares: twelve columns are already a wide table.
MAX_ITERATIONS = 12
#: Rows shown before "show all", as on the two-iteration page.
MANY_FIRST_ROWS = COMPARE_FIRST_ROWS


class ChoiceRefused(ValueError):
    """The iterations asked for cannot be compared; str() says why in one line."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        #: Whether the choice names iterations the skill does not have (a 404, not a 400).
        self.missing = missing


def asked_numbers(given: list[str]) -> list[int]:
    """The numbers in `given` (each value comma-separated; the key may repeat), in order,
    once each; ChoiceRefused for a part that is no iteration number."""
    numbers: dict[int, None] = {}
    for value in given:
        for part in value.split(","):
            text = part.strip()
            if not text:
                continue
            if not text.isdigit() or len(text) > 9:
                shown = text if len(text) <= 20 else text[:20] + "…"
                raise ChoiceRefused(f"“{shown}” is not an iteration number.")
            numbers[int(text)] = None
    return list(numbers)


def choose_iterations(skill: Skill, given: list[str]) -> list[Iteration]:
    """The skill's iterations named in `given` (see `asked_numbers`), light, in display
    order; ChoiceRefused for fewer than two, more than MAX_ITERATIONS or unknown numbers,
    NumberMoved for a number whose results answer to another now."""
    numbers = asked_numbers(given)
    if len(numbers) < 2:
        raise ChoiceRefused("Choose at least two iterations to compare.")
    if len(numbers) > MAX_ITERATIONS:
        raise ChoiceRefused(
            f"Choose at most {MAX_ITERATIONS} iterations to compare ({len(numbers)} chosen)."
        )
    found = _in_display_order(skill, numbers)
    absent = sorted(set(numbers) - {iteration.number for iteration in found})
    if not absent:
        return found
    # A number whose results answer to another one now raises NumberMoved, which pages and
    # the API answer with a 301 to the same address under the new number (runs/views/moved.py).
    reasons = []
    for number in absent:
        why = IssuedNumber.objects.missing(Iteration, skill=skill, number=number)
        if isinstance(why, NumberMoved):
            raise why
        reasons.append(str(why))
    if len(reasons) == 1:
        raise ChoiceRefused(reasons[0], missing=True)
    listed = ", ".join(f"#{number}" for number in absent)
    raise ChoiceRefused(f"{skill.name} has no iterations {listed}.", missing=True)


def _in_display_order(skill: Skill, numbers: list[int]) -> list[Iteration]:
    iterations = Iteration.objects.filter(skill=skill, number__in=numbers)
    return list(iterations.light().in_display_order())


@dataclass(frozen=True)
class Column:
    """One iteration of the comparison and its own treatment − control delta."""

    iteration: Iteration
    side: stats.IterationRuns
    delta: stats.PairedDelta | None
    #: Why the delta has no interval, or why there is no delta; "" when it has an interval.
    no_interval: str

    @property
    def label(self) -> str:
        return self.side.label

    @property
    def number(self) -> int:
        return self.iteration.number

    @property
    def score_key(self) -> str:
        """The table's sort key for this column's scores."""
        return f"score-{self.number}"

    @property
    def change_key(self) -> str:
        """The table's sort key for this column's changes from the first column."""
        return f"change-{self.number}"


@dataclass(frozen=True)
class ManyCell:
    """An eval's treatment score in one column and its change from the first column
    (None in the first column, and where either score is missing)."""

    score: float | None
    change: float | None


@dataclass(frozen=True)
class ManyRow:
    eval_id: str
    name: str
    cells: list[ManyCell]
    #: How the treatment score moved from the first column to the last.
    direction: Direction


@dataclass
class ManyComparison:
    """Iterations side by side: the columns, the comparison of each neighbouring pair (the
    two-iteration page's, whole), and one row per eval in natural order of eval ids."""

    columns: list[Column]
    neighbours: list[Comparison]
    rows: list[ManyRow]

    @property
    def numbers(self) -> list[int]:
        return [column.number for column in self.columns]


def _column(read: ComparedIteration) -> Column:
    summary, side = read.summary, read.side
    delta = summary.delta
    if summary.control is None:
        reason = "no control condition, so no delta"
    elif delta is None:
        reason = "no eval has a score in both conditions, so no delta"
    else:
        reason = stats.no_interval_reason(delta, runs_per_eval=stats.most_runs_per_eval(side))
    return Column(read.iteration, side, delta, reason)


def _direction(first: float | None, last: float | None) -> Direction:
    if first is None or last is None:
        return "one-side"
    if math.isclose(last - first, 0.0, abs_tol=1e-9):
        return "unchanged"
    return "improved" if last > first else "regressed"


def compare_many(iterations: list[Iteration]) -> ManyComparison:
    """Compare `iterations` (two or more, in the order given: the page's display order)."""
    if len(iterations) < 2:
        raise ValueError("compare_many needs at least two iterations")
    read = read_for_comparison(iterations)
    neighbours = [compare_read(before, after) for before, after in pairwise(read)]
    # Each column's scores as its neighbour comparisons computed them: the first column is
    # the first pair's "before", every other the "after" of the pair ending in it.
    scores = [{change.eval_id: change.treatment_before for change in neighbours[0].result.evals}]
    scores += [
        {change.eval_id: change.treatment_after for change in pair.result.evals}
        for pair in neighbours
    ]
    # Where definitions of an eval differ in name, the one made last is read (as compare does).
    cases = sorted(
        (case for side in read for case in side.cases if case.name),
        key=lambda case: (case.created_at, case.pk),
    )
    names = {case.eval_id: case.name for case in cases}
    eval_ids = sorted({eval_id for column in scores for eval_id in column}, key=natural_key)
    rows = []
    for eval_id in eval_ids:
        row = [column.get(eval_id) for column in scores]
        first = row[0]
        cells = [ManyCell(row[0], None)] + [
            ManyCell(score, None if score is None or first is None else score - first)
            for score in row[1:]
        ]
        rows.append(
            ManyRow(eval_id, names.get(eval_id) or eval_id, cells, _direction(first, row[-1]))
        )
    return ManyComparison([_column(side) for side in read], neighbours, rows)


def sort_keys(numbers: list[int]) -> list[str]:
    """The table's sort keys ("-key" sorts descending): by eval, by the first → last change,
    and by each column's score ("score-7") and change from the first ("change-7")."""
    keys = ["eval", "change"]
    for number in numbers:
        keys += [f"score-{number}", f"change-{number}"]
    return keys


@dataclass
class ManyTable(ShownRows[ManyRow]):
    """The per-eval rows the side-by-side page shows."""


def _sort_value(row: ManyRow, key: str, columns: dict[int, int]) -> Any:
    if key == "eval":
        return natural_key(row.eval_id)
    if key == "change":
        first, last = row.cells[0].score, row.cells[-1].score
        return None if first is None or last is None else last - first
    kind, _, number = key.partition("-")
    cell = row.cells[columns[int(number)]]
    return cell.score if kind == "score" else cell.change


def many_table(
    comparison: ManyComparison,
    *,
    sort: str = "eval",
    show: str = "",
    limit: int | None = MANY_FIRST_ROWS,
) -> ManyTable:
    """The rows moving in the `show` direction (first → last column; every one for ""),
    sorted by `sort` (one of `sort_keys`; rows without the value last either way), the first
    `limit` of them (all for None). Ties keep the natural order of eval ids."""
    counts = {direction: 0 for direction in DIRECTIONS}
    for row in comparison.rows:
        counts[row.direction] += 1
    matching = [row for row in comparison.rows if not show or row.direction == show]
    key = sort.lstrip("-") or "eval"
    columns = {number: index for index, number in enumerate(comparison.numbers)}
    present = [row for row in matching if _sort_value(row, key, columns) is not None]
    missing = [row for row in matching if _sort_value(row, key, columns) is None]
    present.sort(key=lambda row: _sort_value(row, key, columns), reverse=sort.startswith("-"))
    ordered = present + missing
    shown = ordered if limit is None else ordered[:limit]
    return ManyTable(shown, ordered, counts, sort or "eval", show)
