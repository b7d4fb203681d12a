"""What each download holds: the matrix, the per-eval table, an iteration's runs, the trend.

Each is a `runs.exporting.Table` of the figures its page shows, read by the same code as
the page (`iteration_detail`, `eval_summary`, `trend_points`), so a download never
disagrees with the screen; numbers stay numbers (a pass rate 0.5, not "50%"). Each asks
a fixed number of queries whatever the number of rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from .. import charts
from ..exporting import Table, Value
from ..models import Iteration, Run, Skill
from ..names import natural_key
from ..stats import Interval
from .eval import eval_runs
from .iteration import DEFAULT_SORT, EvalRow, IterationDetail, iteration_detail
from .skill import trend_points


@dataclass(frozen=True)
class MatrixChoice:
    """The iteration page's filters and order (its query string), without its paging."""

    tag: str = ""
    only: frozenset[str] = field(default_factory=frozenset)
    movement: str = ""
    sort: str = DEFAULT_SORT

    @property
    def chosen(self) -> bool:
        """Whether it asks for anything but every eval in the natural order."""
        return bool(self.tag or self.only or self.movement or self.sort != DEFAULT_SORT)


def _bounds(interval: Interval | None) -> tuple[float | None, float | None]:
    return (interval.low, interval.high) if interval else (None, None)


def matrix_table(iteration: Iteration, choice: MatrixChoice) -> Table:
    """The eval × condition matrix: a row per eval that passes the filters, in their order,
    every row (not a page); per condition its score and run counts."""
    detail, shown = _matrix(iteration, choice)
    columns = ["eval_id", "eval_name", "tags", "negative", "zero_assertions"]
    for name in detail.conditions:
        columns += [f"{name} score", f"{name} graded", f"{name} runs", f"{name} errored"]
        columns.append(f"{name} flaky assertions")
    columns += ["delta", "previous_treatment_score", "change", "movement"]
    rows: list[list[Value]] = []
    for row in shown:
        values: list[Value] = [
            row.eval_id,
            row.name,
            " ".join(row.tags),
            row.negative,
            row.zero_assertions,
        ]
        for cell in row.cells:
            values += [cell.score, cell.graded, cell.runs, cell.errored, " ".join(cell.flaky)]
        values += [row.delta, row.previous_treatment, row.change, row.movement]
        rows.append(values)
    return Table(_name(iteration, "matrix"), columns, rows)


RUN_COLUMNS = (
    "eval_id",
    "eval_name",
    "condition",
    "run",
    "status",
    "pass_rate",
    "passed",
    "total",
    "skill_invoked",
    "total_tokens",
    "duration_ms",
)


def runs_table(
    iteration: Iteration,
    *,
    eval_id: str = "",
    condition: str = "",
    choice: MatrixChoice | None = None,
) -> Table:
    """A row per run of the iteration: its verdict, counts, invocation, tokens and time.

    By eval (natural order), condition and run; `eval_id` and `condition` keep one of each,
    and a matrix `choice` keeps the runs of the evals the matrix shows, in its order.
    `skill_invoked` is the grading's meta check, else a Skill call in the transcript, as
    the iteration's invocation rate counts it; empty where neither was recorded.
    """
    runs = Run.objects.filter(iteration=iteration)
    if eval_id:
        runs = runs.filter(eval_id=eval_id)
    if condition:
        runs = runs.filter(condition__name=condition)
    found = list(
        runs.order_by().values_list(
            "eval_id",
            "eval_case__name",
            "condition__name",
            "condition__position",
            "run_index",
            "status",
            "grading__pass_rate",
            "grading__passed",
            "grading__total",
            "grading__skill_invoked",
            "skill_called",
            "total_tokens",
            "duration_ms",
        )
    )
    if choice is not None and choice.chosen:
        evals = [row.eval_id for row in _matrix(iteration, choice)[1]]
        place = {e: i for i, e in enumerate(evals)}
        found = [r for r in found if r[0] in place]
        found.sort(key=lambda r: (place[r[0]], r[3], r[2], r[4]))
    else:
        found.sort(key=lambda r: (natural_key(r[0]), r[3], r[2], r[4]))
    return Table(_name(iteration, "runs"), RUN_COLUMNS, _run_rows(found))


def _run_rows(found: Sequence[tuple]) -> Iterator[list[Value]]:
    for (
        eval_id,
        eval_name,
        condition,
        _position,
        run_index,
        status,
        pass_rate,
        passed,
        total,
        meta_invoked,
        called,
        tokens,
        duration,
    ) in found:
        yield [
            eval_id,
            eval_name or eval_id,
            condition,
            run_index,
            status,
            pass_rate,
            passed,
            total,
            meta_invoked if meta_invoked is not None else called,
            tokens,
            duration,
        ]


def _matrix(iteration: Iteration, choice: MatrixChoice) -> tuple[IterationDetail, list[EvalRow]]:
    """The iteration's detail and the matrix rows the choice shows, every page of them."""
    detail = iteration_detail(iteration)
    matrix = detail.matrix(
        tag=choice.tag, only=choice.only, movement=choice.movement, sort=choice.sort, paged=False
    )
    return detail, matrix.rows


EVAL_COLUMNS = (
    "eval_id",
    "eval_name",
    "condition",
    "role",
    "runs",
    "graded",
    "errored",
    "runs_passing_all",
    "score",
    "score_low",
    "score_high",
    "assertion_id",
    "assertion_passed",
    "assertion_runs",
)


def eval_table(iteration: Iteration, eval_id: str) -> Table:
    """The eval page's summary: a row per condition × assertion (passes out of runs), each
    with the condition's score over its runs; a condition graded on no assertion, one row."""
    page = eval_runs(iteration, eval_id, limit=0)
    summary = page.summary
    name = page.definition.name if page.definition and page.definition.name else eval_id
    rows: list[list[Value]] = []
    for index, condition in enumerate(summary.conditions):
        score = condition.score
        low, high = _bounds(score.interval if score else None)
        head: list[Value] = [
            eval_id,
            name,
            condition.name,
            condition.role,
            condition.runs,
            condition.graded,
            condition.errored,
            condition.passing,
            score.value if score else None,
            low,
            high,
        ]
        cells = [(a, cells[index]) for a, cells in summary.assertions if cells[index]]
        rows += [[*head, a, cell.passed, cell.runs] for a, cell in cells]
        if not cells:
            rows.append([*head, None, None, None])
    return Table(_name(iteration, "eval", eval_id), EVAL_COLUMNS, rows)


TREND_COLUMNS = (
    "iteration",
    "label",
    "generated_at",
    "mode",
    "agent_model",
    "condition",
    "role",
    "score",
    "score_low",
    "score_high",
    "invocation",
    "invocation_low",
    "invocation_high",
    "mean_tokens",
    "mean_duration_ms",
    "delta",
    "delta_low",
    "delta_high",
    "verdict",
    "comparison_change",
)


def trend_table(skill: Skill) -> Table:
    """The skill page's trend: a row per iteration × condition, oldest first, as charted;
    the treatment − control delta and what changed since the row's previous iteration on
    each of its rows (`charts.comparison_breaks`, as the charts' tables mark it)."""
    points, _ = trend_points(skill)
    changes = {b.index: b.text for b in charts.comparison_breaks(points)}
    rows: list[list[Value]] = []
    for index, point in enumerate(points):
        delta = point.delta
        head: list[Value] = [
            point.number,
            point.label,
            point.generated_at.isoformat() if point.generated_at else None,
            point.mode,
            point.agent_model,
        ]
        tail: list[Value] = [
            delta.mean if delta else None,
            delta.low if delta else None,
            delta.high if delta else None,
            point.signal if delta else None,
            changes.get(index, ""),
        ]
        for c in point.conditions or (None,):
            if c is None:
                rows.append([*head, *[None] * 10, *tail])
                continue
            rows.append(
                [
                    *head,
                    c.name,
                    str(c.role),
                    c.score,
                    c.low,
                    c.high,
                    c.invocation,
                    c.invocation_low,
                    c.invocation_high,
                    c.mean_tokens,
                    c.mean_duration_ms,
                    *tail,
                ]
            )
    return Table(f"{skill.name}-trend", TREND_COLUMNS, rows)


def _name(iteration: Iteration, *parts: str) -> str:
    return "-".join([iteration.skill.name, str(iteration.number), *parts])
