"""The skill page's "Triggering" chart: recall and false-trigger rate per description version.

Both functions take the rows `TriggerPanel.figure_points` gives, one per trigger iteration:
`{"number", "label", "url", "split", "recall", "false_trigger_rate"}`, each rate a
`{"value", "low", "high"}` or None. The figure is built like the trend charts (same
layout, bands, hover and escaping: `layout`, `traces`); the table holds the same numbers
for pages read without JavaScript.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .colours import PALETTE
from .layout import trend_layout
from .points import TrendPoint
from .tables import DASH, ChartRow, ChartTable
from .traces import band, finish, line, value_detail

#: (key, legend name, (colour, dash)): two lines told apart by dash and marker, not colour alone.
RATES = (
    ("recall", "recall (should trigger)", (PALETTE[0], "solid")),
    ("false_trigger_rate", "false-trigger rate (should not)", (PALETTE[5], "dash")),
)

#: What the figures of a point were measured on, as the table says it.
SPLITS = {"test": "test split", "": "all queries"}


def trigger_trend_figure(points: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Return recall and false-trigger rate per trigger iteration, each with its 95% band."""
    ordered = sorted(points, key=lambda p: p["number"])
    trend = [_trend_point(p) for p in ordered]
    traces: list[dict[str, Any]] = []
    for key, name, style in RATES:
        rates = [p[key] for p in ordered]
        if all(rate is None for rate in rates):
            continue
        bounds = [(t.number, *_bounds(rate)) for t, rate in zip(trend, rates, strict=True)]
        traces.append(band(name, style[0], bounds))
        values = [rate["value"] if rate else None for rate in rates]
        details = [
            value_detail(name, v, lo, hi, _percent) + _split_note(p)
            for p, v, (_, lo, hi) in zip(ordered, values, bounds, strict=True)
        ]
        traces.append(line(name, style, trend, values, details))
    yaxis = {"title": {"text": "Share of runs"}, "range": [0, 1.02], "tickformat": ".0%"}
    legend = [name for _, name, _ in RATES]
    return finish(traces, trend_layout(trend, yaxis=yaxis, legend=legend))


def trigger_trend_table(points: Iterable[Mapping[str, Any]]) -> ChartTable:
    """The chart's numbers: a row per trigger iteration, oldest first."""
    ordered = sorted(points, key=lambda p: p["number"])
    if not ordered:
        return ChartTable(headers=[], note="No trigger results yet")
    rows = [
        ChartRow(
            _trend_point(p).heading,
            p.get("url", ""),
            [_cell(p["recall"]), _cell(p["false_trigger_rate"]), SPLITS[p.get("split") or ""]],
        )
        for p in ordered
    ]
    headers = ["Description", "Recall (95% CI)", "False-trigger rate (95% CI)", "Measured on"]
    return ChartTable(headers=headers, rows=rows)


def _trend_point(point: Mapping[str, Any]) -> TrendPoint:
    return TrendPoint(number=point["number"], label=point["label"], url=point.get("url", ""))


def _bounds(rate: Mapping[str, float] | None) -> tuple[float | None, float | None]:
    return (rate["low"], rate["high"]) if rate else (None, None)


def _split_note(point: Mapping[str, Any]) -> str:
    return " on the test split" if point.get("split") == "test" else ""


def _cell(rate: Mapping[str, float] | None) -> str:
    if rate is None:
        return DASH
    low, high = rate["low"], rate["high"]
    return f"{_percent(rate['value'])} ({_percent(low)} to {_percent(high)})"


def _percent(value: float) -> str:
    return f"{value:.0%}"
