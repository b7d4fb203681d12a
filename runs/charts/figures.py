"""The skill page's trend charts as plotly figures: JSON-safe dicts built from TrendPoints.

Each `*_figure` function takes `TrendPoint`s (one per iteration, in the order to chart
them) and returns a plotly figure as a plain dict, ready for `{{ figure|json_script:"id" }}`
and `static/js/charts.js`. The dicts are built directly, exactly as plotly's
`go.Figure(...).to_json()` would write them (tests/runs/test_charts.py validates every
figure through plotly): building `go.Figure`s on every request cost more than the rest of
the skill page.

Lines are broken where the comparison changes (mode, agent model, harness or eval set, see
`breaks`): no line joins two iterations that measured different things, and the layout
(`layout`) marks each break.

Text that comes from users or agents (iteration labels, condition names, models) goes in
only as trace data (names, tick text, customdata, hover text), never spliced into a hover
template; it is entity-escaped because plotly reads `<b>`, `<a href>` and friends in every
text it draws, and should show "a<b" as typed. Every customdata row starts with the point's
page URL, which charts.js follows on click.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..stats.intervals import Interval
from ..stats.verdicts import format_interval, signed, unsigned
from .breaks import comparison_breaks, segment_starts
from .layout import (
    COST_PLOT_HEIGHT,
    GRID,
    MUTED,
    PLOT_HEIGHT,
    TEXT,
    axis,
    break_markers,
    escape,
    marker_size,
    note,
    trend_layout,
)
from .points import ConditionPoint, TrendPoint
from .traces import (
    EMPTY,
    HOVER,
    NO_INTERVAL,
    band,
    condition,
    condition_colours,
    finish,
    gapped,
    hover_row,
    line,
    scatter,
    value_detail,
)

# The badges' colours (static/css/evalsite.css): green, red, amber, grey.
HELPS, HURTS, SUGGESTIVE, NOISE = "#1a7f37", "#cf222e", "#b7791f", MUTED
#: Rates (scores, invocation, shares of runs) on a fixed 0–1 scale.
RATE_TICKS = [0, 0.2, 0.4, 0.6, 0.8, 1]
PERCENT_TICKS = [0, 0.25, 0.5, 0.75, 1]

#: The delta chart's marker classes: the three verdicts of the badges, with a direction
#: where the interval gives one. (legend name, colour, symbol, signal, direction)
DELTA_CLASSES = (
    ("significant: skill helps", HELPS, "triangle-up", "significant", 1),
    ("significant: skill hurts", HURTS, "triangle-down", "significant", -1),
    ("suggestive: skill helps", SUGGESTIVE, "triangle-up-open", "suggestive", 1),
    ("suggestive: skill hurts", SUGGESTIVE, "triangle-down-open", "suggestive", -1),
    ("noise", NOISE, "circle-open", "noise", 0),
)


def score_trend_figure(points: Iterable[TrendPoint]) -> dict[str, Any]:
    """Return per-condition scores across iterations with their 95% interval bands."""
    return _banded_trend(
        list(points),
        lambda c: (c.score, c.low, c.high),
        value_text=unsigned,
        yaxis={"title": {"text": "Score"}, "tickvals": RATE_TICKS, "tickformat": ".1f"},
    )


def invocation_trend_figure(points: Iterable[TrendPoint]) -> dict[str, Any]:
    """Return each skill-loading condition's invocation rate with its Wilson band."""
    ordered = list(points)
    return _banded_trend(
        ordered,
        lambda c: (c.invocation, c.invocation_low, c.invocation_high),
        value_text=lambda v: f"{v:.0%}",
        yaxis={"title": {"text": "Invoked"}, "tickvals": PERCENT_TICKS, "tickformat": ".0%"},
        empty=not_recorded("skill invocation", ordered),
    )


def not_recorded(what: str, points: list[TrendPoint]) -> str:
    """ "Skill invocation not recorded by skill-creator", or "No data yet" with no iterations."""
    if not points:
        return EMPTY
    tools = sorted({p.tool for p in points if p.tool})
    by = f" by {' or '.join(tools)}" if tools else ""
    return f"{what[0].upper()}{what[1:]} not recorded{by}"


def delta_trend_figure(points: Iterable[TrendPoint]) -> dict[str, Any]:
    """Return treatment − control per iteration with its interval; up means the skill helps.

    The grey line joining the markers breaks where the comparison changes: a new-skill
    delta (with − without) and a revision delta (new − old) are different questions.
    """
    ordered = list(points)
    breaks = comparison_breaks(ordered)
    with_delta = [p for p in ordered if p.delta is not None]
    traces: list[dict[str, Any]] = []
    if with_delta:
        xs, ys, _ = gapped(
            ordered,
            [p.delta.mean if p.delta else None for p in ordered],
            segment_starts(breaks),
        )
        traces.append(
            scatter(
                x=xs,
                y=ys,
                mode="lines",
                line={"color": GRID, "width": 1.5},
                hoverinfo="skip",
                showlegend=False,
            )
        )
    size = marker_size(ordered, 10)
    for name, colour, symbol, signal, direction in DELTA_CLASSES:
        members = [p for p in with_delta if _delta_class(p) == (signal, direction)]
        if not members:
            continue
        traces.append(
            scatter(
                x=[p.number for p in members],
                y=[p.delta.mean for p in members],
                name=name,
                mode="markers",
                marker=dict(
                    color=colour, symbol=symbol, size=size, line=dict(color=colour, width=2)
                ),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=[_above(p.delta.mean, p.delta.high) for p in members],
                    arrayminus=[_below(p.delta.mean, p.delta.low) for p in members],
                    color=colour,
                    # Many iterations: thinner bars without caps, so neighbours stay apart.
                    thickness=1.5 if size >= 10 else 1,
                    width=4 if size >= 10 else 0,
                ),
                customdata=[hover_row(p, _delta_text(p)) for p in members],
                hovertemplate=HOVER,
            )
        )
    bounds = [v for p in with_delta for v in (p.delta.mean, p.delta.low, p.delta.high)]
    reach = max((abs(v) for v in bounds if v is not None), default=0.0)
    # Symmetric about 0, so the zero line sits mid-chart and up/down read at a glance;
    # the break labels' headroom is added on both sides to keep it there.
    limit = min(1.05, max(0.25, reach * 1.15))
    markers = break_markers(ordered, breaks)
    limit = markers.headroom(-limit, limit, panel=PLOT_HEIGHT / 2)[1]
    layout = trend_layout(
        ordered,
        yaxis={
            "title": {"text": "Δ score"},
            "range": [-limit, limit],
            "tickformat": "+.2f",
            "zeroline": True,
            "zerolinecolor": TEXT,
            "zerolinewidth": 1.5,
        },
        markers=markers,
        legend=[t["name"] for t in traces if "name" in t],
    )
    # Beside the zero line, where up and down are read; the break labels have the top.
    layout.setdefault("annotations", []).extend(
        [
            _direction("▲ skill helps", yanchor="bottom"),
            _direction("▼ skill hurts", yanchor="top"),
        ]
    )
    return finish(traces, layout)


def _direction(text: str, *, yanchor: str) -> dict[str, Any]:
    """A note at the zero line's left end, just above or below it."""
    return {
        **note(text, x=0, xanchor="left", y=0, yanchor=yanchor),
        "yref": "y",
        "bgcolor": "rgba(255, 255, 255, 0.8)",
    }


def cost_trend_figure(points: Iterable[TrendPoint]) -> dict[str, Any]:
    """Return mean tokens (top) and mean duration (bottom) per condition across iterations."""
    ordered = list(points)
    starts = segment_starts(breaks := comparison_breaks(ordered))
    traces: list[dict[str, Any]] = []
    names: list[str] = []
    top = 0.0
    for name, style in condition_colours(ordered).items():
        rows = [(p, condition(p, name)) for p in ordered]
        tokens = [c.mean_tokens if c else None for _, c in rows]
        seconds = [_seconds(c.mean_duration_ms) if c else None for _, c in rows]
        if all(v is None for v in tokens + seconds):
            continue
        names.append(name)
        top = max([top, *(v for v in tokens if v is not None)])
        for values, yaxis, unit in (
            (tokens, "y", lambda v: f"{v:,.0f} tokens"),
            (seconds, "y2", lambda v: f"{v:,.1f} s"),
        ):
            details = [f"{escape(name)}: {'–' if v is None else unit(v)}" for v in values]
            # One legend entry per condition; it toggles both panels through legendgroup.
            legend = yaxis == "y"
            traces.append(
                line(name, style, ordered, values, details, starts, yaxis=yaxis, showlegend=legend)
            )
    # Stacked on one x axis, so an iteration's tokens sit straight above its duration and
    # the iteration ticks are drawn once. Each panel has its own short title and the room
    # for it; the break labels sit in the top panel.
    markers = break_markers(ordered, breaks)
    tokens_axis: dict[str, Any] = {"title": {"text": "Tokens"}, "domain": [0.56, 1]}
    if markers.rows and top > 0:
        tokens_axis["range"] = markers.headroom(0, top * 1.08, panel=COST_PLOT_HEIGHT * 0.44)
    else:
        tokens_axis["rangemode"] = "tozero"
    layout = trend_layout(
        ordered,
        yaxis=tokens_axis,
        markers=markers,
        legend=names,
        plot_height=COST_PLOT_HEIGHT,
    )
    layout["xaxis"]["anchor"] = "y2"
    layout["yaxis2"] = {
        **axis(),
        "title": {"text": "Seconds"},
        "rangemode": "tozero",
        "domain": [0, 0.44],
        "anchor": "x",
    }
    return finish(traces, layout, empty=not_recorded("tokens and duration", ordered))


def _banded_trend(
    points: list[TrendPoint],
    pick: Callable[[ConditionPoint], tuple[float | None, float | None, float | None]],
    *,
    value_text: Callable[[float], str],
    yaxis: dict[str, Any],
    empty: str = EMPTY,
) -> dict[str, Any]:
    """A line per condition with a value, each with a shaded band between low and high,
    both broken where the comparison changes; a rate's axis from 0 to 1 (and headroom)."""
    breaks = comparison_breaks(points)
    starts = segment_starts(breaks)
    traces: list[dict[str, Any]] = []
    for name, style in condition_colours(points).items():
        rows = [(p, pick(c) if (c := condition(p, name)) else (None, None, None)) for p in points]
        if all(value is None for _, (value, _, _) in rows):
            continue
        bounds = [(p.number, lo, hi) for p, (_, lo, hi) in rows]
        traces.append(band(name, style[0], bounds, starts))
        details = [value_detail(name, value, lo, hi, value_text) for _, (value, lo, hi) in rows]
        traces.append(line(name, style, points, [v for _, (v, _, _) in rows], details, starts))
    markers = break_markers(points, breaks)
    yaxis = {**yaxis, "range": markers.headroom(0, 1.02, panel=PLOT_HEIGHT)}
    legend = [t["name"] for t in traces if t.get("showlegend", True)]
    layout = trend_layout(points, yaxis=yaxis, markers=markers, legend=legend)
    return finish(traces, layout, empty=empty)


def _delta_class(point: TrendPoint) -> tuple[str, int]:
    """(verdict, direction): the badge's word, and up/down where the interval gives one."""
    delta = point.delta
    if delta is None or point.signal == "noise" or delta.mean == 0:
        return ("noise", 0)
    return (point.signal, 1 if delta.mean > 0 else -1)


def _delta_text(point: TrendPoint) -> str:
    delta = point.delta
    if delta.low is None or delta.high is None:
        ci = NO_INTERVAL
    else:
        ci = f"95% CI {format_interval(Interval(delta.low, delta.high))}"
    signal, direction = _delta_class(point)
    if signal == "noise":
        verdict = "noise: not distinguishable from chance"
    else:
        verdict = f"{signal}: skill {'helps' if direction > 0 else 'hurts'}"
    return f"Δ {signed(delta.mean)} ({ci}): {verdict}"


def _above(mean: float, high: float | None) -> float | None:
    return None if high is None else max(high - mean, 0.0)


def _below(mean: float, low: float | None) -> float | None:
    return None if low is None else max(mean - low, 0.0)


def _seconds(milliseconds: float | None) -> float | None:
    return None if milliseconds is None else milliseconds / 1000.0


#: The skill page's charts, by the name its template gives each.
CHARTS: dict[str, Callable[[Iterable[TrendPoint]], dict[str, Any]]] = {
    "score": score_trend_figure,
    "delta": delta_trend_figure,
    "invocation": invocation_trend_figure,
    "cost": cost_trend_figure,
}
