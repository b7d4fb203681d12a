"""The eval pages' own data: an eval's runs by condition, and two runs side by side.

The eval page shows a summary (per condition and per assertion, `history.eval_summary`)
and the first RUNS_FIRST runs of each condition, the rest a link away (`?runs=all`). The
diff page compares any two runs (two conditions, or one condition in two iterations): their
final messages and their diff.patch, line by line.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from ..models import EvalCase, Iteration, Run
from .history import EvalSummary, eval_summary

#: Runs of each condition the eval page shows before "show all": a 20-run eval was a page
#: of 11,000 px.
RUNS_FIRST = 3

#: Texts longer than this are compared by their head (difflib is quadratic on changed runs).
MAX_DIFF_LINES = 4_000


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


@dataclass
class Column:
    """One condition's runs on the eval page: those shown, and those a link away."""

    condition: str
    role: str
    shown: list[Run]
    hidden: list[Run] = field(default_factory=list)


@dataclass
class EvalRuns:
    """The eval page's data: every run (for the diff form), its summary and its columns."""

    runs: list[Run]
    summary: EvalSummary
    columns: list[Column]

    @property
    def hidden(self) -> int:
        return sum(len(column.hidden) for column in self.columns)

    @property
    def collapsed(self) -> bool:
        """Whether any condition has more runs than the page shows by default."""
        return any(len(column.shown) + len(column.hidden) > RUNS_FIRST for column in self.columns)

    @property
    def definition(self) -> EvalCase | None:
        """The definition the page shows: its first run's."""
        return self.runs[0].eval_case if self.runs else None


def eval_runs(iteration: Iteration, eval_id: str, *, limit: int | None = RUNS_FIRST) -> EvalRuns:
    """The eval's runs in the iteration, the first `limit` of each condition shown (all
    for None), with the summary of all of them."""
    runs = list(iteration.runs.for_eval_page(eval_id))
    columns: dict[str, Column] = {}
    for run in runs:
        column = columns.setdefault(
            run.condition.name, Column(run.condition.name, run.condition.role, [])
        )
        if limit is None or len(column.shown) < limit:
            column.shown.append(run)
        else:
            column.hidden.append(run)
    return EvalRuns(runs, eval_summary(runs), list(columns.values()))
