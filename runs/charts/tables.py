"""Every trend chart's numbers as a table: what a page shows without JavaScript.

Plain strings in rows, formatted as the rest of the site writes numbers; the template only
lays them out. A chart with nothing to show says why in `note` instead of having rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..stats.verdicts import signed, unsigned
from .figures import EMPTY, not_recorded
from .points import ConditionPoint, TrendPoint

DASH = "–"


@dataclass(frozen=True)
class ChartRow:
    """One iteration: its heading ("#3 label"), its page, and the values after them."""

    heading: str
    url: str
    values: list[str]


@dataclass(frozen=True)
class ChartTable:
    """A chart's data: a header row, one row per iteration (oldest first), or a note."""

    headers: list[str]
    rows: list[ChartRow] = field(default_factory=list)
    note: str = ""


def chart_tables(points: Iterable[TrendPoint]) -> dict[str, ChartTable]:
    """The table of each chart of `runs.charts.CHARTS`, under the same names."""
    ordered = list(points)  # in display order, as given
    return {
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
    rows = []
    for point in points:
        values = [cell(c) if (c := _condition(point, n)) else None for n in names]
        rows.append(ChartRow(point.heading, point.url, [DASH if v is None else v for v in values]))
    return ChartTable(headers=["Iteration", *(f"{n} {what} (95% CI)" for n in names)], rows=rows)


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
    with_delta = [p for p in points if p.delta is not None]
    if not with_delta:
        return ChartTable(headers=[], note=EMPTY if not points else "No treatment − control delta")
    rows = []
    for point in with_delta:
        delta = point.delta
        ci = (
            f"{signed(delta.low)} to {signed(delta.high)}"
            if delta.low is not None and delta.high is not None
            else "no interval"
        )
        rows.append(ChartRow(point.heading, point.url, [signed(delta.mean), ci, point.signal]))
    return ChartTable(
        headers=["Iteration", "Δ (treatment − control)", "95% CI", "verdict"], rows=rows
    )


def _cost_table(points: list[TrendPoint]) -> ChartTable:
    names = _names(points, lambda c: c.mean_tokens is not None or c.mean_duration_ms is not None)
    if not names:
        return ChartTable(headers=[], note=not_recorded("tokens and duration", points))
    headers = ["Iteration"]
    for name in names:
        headers += [f"{name} mean tokens", f"{name} mean duration"]
    rows = []
    for point in points:
        row: list[str] = []
        for name in names:
            c = _condition(point, name)
            tokens = c.mean_tokens if c else None
            duration = c.mean_duration_ms if c else None
            row.append(DASH if tokens is None else f"{tokens:,.0f}")
            row.append(DASH if duration is None else f"{duration / 1000:,.1f} s")
        rows.append(ChartRow(point.heading, point.url, row))
    return ChartTable(headers=headers, rows=rows)
