"""Every trend chart's numbers as a table: what a page shows without JavaScript.

Plain strings in rows, formatted as the rest of the site writes numbers; the template only
lays them out. A chart with nothing to show says why in `note` instead of having rows.
Where the comparison changes (charts.breaks), the first row after the change says what
changed in `change`, as the chart's dotted line does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from ..stats.verdicts import signed, unsigned
from .breaks import Break, comparison_breaks
from .figures import EMPTY, not_recorded
from .points import ConditionPoint, TrendPoint

DASH = "–"


@dataclass(frozen=True)
class ChartRow:
    """One iteration: its heading ("#3 label"), its page, and the values after them;
    `change` says what changed since the row before ("#5: model changed (…)"), if anything."""

    heading: str
    url: str
    values: list[str]
    change: str = ""
    #: Its iteration's place among the points charted.
    index: int = 0


@dataclass(frozen=True)
class ChartTable:
    """A chart's data: a header row, one row per iteration (in chart order), or a note;
    `breaks` are where its lines break, for the caption under the chart."""

    headers: list[str]
    rows: list[ChartRow] = field(default_factory=list)
    note: str = ""
    breaks: list[Break] = field(default_factory=list)


def chart_tables(points: Iterable[TrendPoint]) -> dict[str, ChartTable]:
    """The table of each chart of `runs.charts.CHARTS`, under the same names."""
    ordered = list(points)  # in display order, as given
    tables = {
        "score": _per_condition(ordered, "score", _score_cell),
        "delta": _delta_table(ordered),
        "invocation": _per_condition(
            ordered,
            "invocation",
            _invocation_cell,
            note=not_recorded("skill invocation", ordered),
        ),
        "cost": _cost_table(ordered),
    }
    breaks = comparison_breaks(ordered)
    if not breaks:
        return tables
    changes = {b.index: b.text for b in breaks}
    return {
        name: replace(table, rows=_marked(table.rows, changes), breaks=breaks)
        if table.rows
        else table
        for name, table in tables.items()
    }


def _rows(points: list[TrendPoint], cells: list[tuple[int, list[str]]]) -> list[ChartRow]:
    """A row per (index of its point, values), its index kept for `_marked`."""
    return [
        ChartRow(points[index].heading, points[index].url, values, index=index)
        for index, values in cells
    ]


def _marked(rows: list[ChartRow], changes: dict[int, str]) -> list[ChartRow]:
    """`rows`, each saying the breaks since the row before, so a table that skips an
    iteration still shows the change it carried (the first row has none to differ from)."""
    marked: list[ChartRow] = []
    last = 0
    for row in rows:
        said = [changes[i] for i in range(last + 1, row.index + 1) if i in changes]
        marked.append(replace(row, change="; ".join(said) if marked else ""))
        last = row.index
    return marked


def _names(points: list[TrendPoint], has: Callable[[ConditionPoint], bool]) -> list[str]:
    """Conditions with at least one value, treatment first, then control, then the rest."""
    rank = {"treatment": 0, "control": 1}
    seen: dict[str, str] = {}
    for point in points:
        for condition in point.conditions:
            if has(condition):
                seen.setdefault(condition.name, condition.role)
    return sorted(seen, key=lambda name: (rank.get(seen[name], 2), name))


def _condition(point: TrendPoint, name: str) -> ConditionPoint | None:
    return next((c for c in point.conditions if c.name == name), None)


def _per_condition(
    points: list[TrendPoint],
    what: str,
    cell: Callable[[ConditionPoint], str | None],
    *,
    note: str = EMPTY,
) -> ChartTable:
    names = _names(points, lambda c: cell(c) is not None)
    if not names:
        return ChartTable(headers=[], note=note if points else EMPTY)
    cells = []
    for index, point in enumerate(points):
        values = [cell(c) if (c := _condition(point, n)) else None for n in names]
        cells.append((index, [DASH if v is None else v for v in values]))
    headers = ["Iteration", *(f"{n} {what} (95% CI)" for n in names)]
    return ChartTable(headers=headers, rows=_rows(points, cells))


def _score_cell(c: ConditionPoint) -> str | None:
    return _with_interval(c.score, c.low, c.high, unsigned)


def _invocation_cell(c: ConditionPoint) -> str | None:
    return _with_interval(c.invocation, c.invocation_low, c.invocation_high, _percent)


def _with_interval(
    value: float | None, low: float | None, high: float | None, show: Callable[[float], str]
) -> str | None:
    if value is None:
        return None
    if low is None or high is None:
        return f"{show(value)} (no interval)"
    return f"{show(value)} ({show(low)} to {show(high)})"


def _percent(value: float) -> str:
    return f"{value:.0%}"


def _delta_table(points: list[TrendPoint]) -> ChartTable:
    with_delta = [(i, p) for i, p in enumerate(points) if p.delta is not None]
    if not with_delta:
        return ChartTable(headers=[], note=EMPTY if not points else "No treatment − control delta")
    cells = []
    for index, point in with_delta:
        delta = point.delta
        ci = (
            f"{signed(delta.low)} to {signed(delta.high)}"
            if delta.low is not None and delta.high is not None
            else "no interval"
        )
        cells.append((index, [signed(delta.mean), ci, point.signal]))
    headers = ["Iteration", "Δ (treatment − control)", "95% CI", "verdict"]
    return ChartTable(headers=headers, rows=_rows(points, cells))


def _cost_table(points: list[TrendPoint]) -> ChartTable:
    names = _names(points, lambda c: c.mean_tokens is not None or c.mean_duration_ms is not None)
    if not names:
        return ChartTable(headers=[], note=not_recorded("tokens and duration", points))
    headers = ["Iteration"]
    for name in names:
        headers += [f"{name} mean tokens", f"{name} mean duration"]
    cells = []
    for index, point in enumerate(points):
        row: list[str] = []
        for name in names:
            c = _condition(point, name)
            tokens = c.mean_tokens if c else None
            duration = c.mean_duration_ms if c else None
            row.append(DASH if tokens is None else f"{tokens:,.0f}")
            row.append(DASH if duration is None else f"{duration / 1000:,.1f} s")
        cells.append((index, row))
    return ChartTable(headers=headers, rows=_rows(points, cells))
