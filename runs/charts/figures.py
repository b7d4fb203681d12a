"""The skill page's trend charts as plotly figures: JSON-safe dicts built from TrendPoints.

Each `*_figure` function takes `TrendPoint`s (one per iteration) and returns a plotly figure
as a plain dict, ready for `{{ figure|json_script:"id" }}` and `static/js/charts.js`. The
dicts are built directly, exactly as plotly's `go.Figure(...).to_json()` would write them
(tests/runs/test_charts.py validates every figure through plotly): building `go.Figure`s
on every request cost more than the rest of the skill page.

Text that comes from users or agents (iteration labels, condition names) goes in only as
trace data (names, tick text, customdata), never spliced into a hover template; it is
entity-escaped because plotly reads `<b>`, `<a href>` and friends in every text it draws,
and should show "a<b" as typed. Every customdata row starts with the point's page URL, which
charts.js follows on click.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..stats.intervals import Interval
from ..stats.verdicts import format_interval, signed, unsigned
from .colours import figure_colours
from .points import ConditionPoint, TrendPoint, segments

HEIGHT = 260
COST_HEIGHT = 320  # two stacked panels need a little more room than one
FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
GRID = "#e4e4e7"
TEXT = "#27272a"
# The badges' colours (static/css/evalsite.css): green, red, amber, grey.
HELPS, HURTS, SUGGESTIVE, NOISE = "#1a7f37", "#cf222e", "#b7791f", "#6e7781"
HOVER = "%{customdata[1]}<br>%{customdata[2]}<extra></extra>"
NO_INTERVAL = "no interval"
#: The marker of each line style (charts.colours.DASHES).
MARKERS = {"solid": "circle", "dash": "square", "dot": "diamond", "dashdot": "x"}
EMPTY = "No data yet"

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
        _sorted(points),
        lambda c: (c.score, c.low, c.high),
        value_text=unsigned,
        yaxis={"title": {"text": "Score (pass rate)"}, "range": [0, 1.02], "tickformat": ".1f"},
    )


def invocation_trend_figure(points: Iterable[TrendPoint]) -> dict[str, Any]:
    """Return each skill-loading condition's invocation rate with its Wilson band."""
    ordered = _sorted(points)
    return _banded_trend(
        ordered,
        lambda c: (c.invocation, c.invocation_low, c.invocation_high),
        value_text=lambda v: f"{v:.0%}",
        yaxis={"title": {"text": "Skill invoked"}, "range": [0, 1.02], "tickformat": ".0%"},
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
    """Return treatment − control per iteration with its interval; up means the skill helps."""
    ordered = _sorted(points)
    with_delta = [p for p in ordered if p.delta is not None]
    traces: list[dict[str, Any]] = []
    if with_delta:
        traces.append(
            _scatter(
                x=[p.number for p in ordered],
                y=[p.delta.mean if p.delta else None for p in ordered],
                mode="lines",
                line={"color": GRID, "width": 1.5},
                hoverinfo="skip",
                showlegend=False,
            )
        )
    for name, colour, symbol, signal, direction in DELTA_CLASSES:
        members = [p for p in with_delta if _delta_class(p) == (signal, direction)]
        if not members:
            continue
        traces.append(
            _scatter(
                x=[p.number for p in members],
                y=[p.delta.mean for p in members],
                name=name,
                mode="markers",
                marker=dict(color=colour, symbol=symbol, size=10, line=dict(color=colour, width=2)),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=[_above(p.delta.mean, p.delta.high) for p in members],
                    arrayminus=[_below(p.delta.mean, p.delta.low) for p in members],
                    color=colour,
                    thickness=1.5,
                    width=4,
                ),
                customdata=[_hover_row(p, _delta_text(p)) for p in members],
                hovertemplate=HOVER,
            )
        )
    bounds = [v for p in with_delta for v in (p.delta.mean, p.delta.low, p.delta.high)]
    reach = max((abs(v) for v in bounds if v is not None), default=0.0)
    # Symmetric about 0, so the zero line sits mid-chart and up/down read at a glance.
    limit = min(1.05, max(0.25, reach * 1.15))
    layout = _layout(
        ordered,
        yaxis={
            "title": {"text": "Δ score (treatment − control)"},
            "range": [-limit, limit],
            "tickformat": "+.2f",
            "zeroline": True,
            "zerolinecolor": TEXT,
            "zerolinewidth": 1.5,
        },
    )
    layout["annotations"] = [
        _note("▲ skill helps", x=1, xanchor="right", y=1, yanchor="top"),
        _note("▼ skill hurts", x=1, xanchor="right", y=0, yanchor="bottom"),
    ]
    return _finish(traces, layout)


def cost_trend_figure(points: Iterable[TrendPoint]) -> dict[str, Any]:
    """Return mean tokens (top) and mean duration (bottom) per condition across iterations."""
    ordered = _sorted(points)
    traces: list[dict[str, Any]] = []
    for name, style in _condition_colours(ordered).items():
        rows = [(p, _condition(p, name)) for p in ordered]
        tokens = [c.mean_tokens if c else None for _, c in rows]
        seconds = [_seconds(c.mean_duration_ms) if c else None for _, c in rows]
        if all(v is None for v in tokens + seconds):
            continue
        for values, yaxis, unit in (
            (tokens, "y", lambda v: f"{v:,.0f} tokens"),
            (seconds, "y2", lambda v: f"{v:,.1f} s"),
        ):
            details = [f"{_text(name)}: {'–' if v is None else unit(v)}" for v in values]
            # One legend entry per condition; it toggles both panels through legendgroup.
            legend = yaxis == "y"
            traces.append(
                _line(name, style, ordered, values, details, yaxis=yaxis, showlegend=legend)
            )
    # Stacked on one x axis, so an iteration's tokens sit straight above its duration and
    # the (long) iteration labels are drawn once.
    layout = _layout(
        ordered,
        yaxis={"title": {"text": "Mean tokens"}, "rangemode": "tozero", "domain": [0.56, 1]},
    )
    layout["height"] = COST_HEIGHT
    layout["xaxis"]["anchor"] = "y2"
    layout["yaxis2"] = {
        **_axis(),
        "title": {"text": "Mean time (s)"},
        "rangemode": "tozero",
        "domain": [0, 0.44],
        "anchor": "x",
    }
    return _finish(traces, layout, empty=not_recorded("tokens and duration", ordered))


def _banded_trend(
    points: list[TrendPoint],
    pick: Callable[[ConditionPoint], tuple[float | None, float | None, float | None]],
    *,
    value_text: Callable[[float], str],
    yaxis: dict[str, Any],
    empty: str = EMPTY,
) -> dict[str, Any]:
    """A line per condition with a value, each with a shaded band between low and high."""
    traces: list[dict[str, Any]] = []
    for name, style in _condition_colours(points).items():
        rows = [(p, pick(c) if (c := _condition(p, name)) else (None, None, None)) for p in points]
        if all(value is None for _, (value, _, _) in rows):
            continue
        traces.append(_band(name, style[0], [(p.number, lo, hi) for p, (_, lo, hi) in rows]))
        details = [_value_text(name, value, lo, hi, value_text) for _, (value, lo, hi) in rows]
        traces.append(_line(name, style, points, [v for _, (v, _, _) in rows], details))
    return _finish(traces, _layout(points, yaxis=yaxis), empty=empty)


def _line(
    name: str,
    style: tuple[str, str],
    points: list[TrendPoint],
    values: list[float | None],
    details: list[str],
    **extra: Any,
) -> dict[str, Any]:
    """A condition's line across iterations; None leaves a gap, details are its hover lines.

    `style` is (colour, dash); a dashed line also gets its own marker shape, so a lone
    point of it is told from another condition of the same colour.
    """
    colour, dash = style
    return _scatter(
        x=[p.number for p in points],
        y=values,
        name=_text(name),
        legendgroup=_text(name),
        mode="lines+markers",
        line={"color": colour, "width": 2, "dash": dash},
        marker={"color": colour, "size": 7, "symbol": MARKERS.get(dash, "circle")},
        customdata=[_hover_row(p, d) for p, d in zip(points, details, strict=True)],
        hovertemplate=HOVER,
        **extra,
    )


def _band(
    name: str, colour: str, bounds: list[tuple[int, float | None, float | None]]
) -> dict[str, Any]:
    """One closed shape per run of iterations with an interval: highs forward, lows back."""
    xs: list[int | None] = []
    ys: list[float | None] = []
    pairs = [(lo, hi) if lo is not None and hi is not None else None for _, lo, hi in bounds]
    for run in segments(pairs):
        if xs:
            xs.append(None)  # a gap separates the shapes of one trace
            ys.append(None)
        xs += [bounds[i][0] for i, _ in run] + [bounds[i][0] for i, _ in reversed(run)]
        ys += [hi for _, (_, hi) in run] + [lo for _, (lo, _) in reversed(run)]
    return _scatter(
        x=xs,
        y=ys,
        name=_text(f"{name} 95% CI"),
        legendgroup=_text(name),
        showlegend=False,
        mode="lines",
        fill="toself",
        fillcolor=_rgba(colour, 0.18),
        # A thin edge, so a lone iteration's interval still shows, as a vertical bar.
        line={"color": _rgba(colour, 0.45), "width": 1},
        hoverinfo="skip",
    )


def _layout(points: list[TrendPoint], *, yaxis: dict[str, Any]) -> dict[str, Any]:
    """The shared look: fixed height, small margins, category x axis "#3 iteration-3"."""
    numbers = [p.number for p in points]
    return {
        "height": HEIGHT,
        "autosize": True,
        "margin": {"l": 56, "r": 12, "t": 32, "b": 44},
        "font": {"family": FONT, "size": 12, "color": TEXT},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "hovermode": "closest",
        "hoverlabel": {"font": {"family": FONT}},
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        "xaxis": {
            **_axis(),
            "type": "category",
            "categoryorder": "array",
            "categoryarray": numbers,
            "tickmode": "array",
            "tickvals": numbers,
            "ticktext": [_text(p.heading) for p in points],
        },
        "yaxis": {**_axis(), **yaxis},
    }


def _axis() -> dict[str, Any]:
    # Fixed ranges: zooming into a handful of iterations only steals the page's scrolling.
    return dict(gridcolor=GRID, linecolor=GRID, zeroline=False, automargin=True, fixedrange=True)


def _scatter(**properties: Any) -> dict[str, Any]:
    """A scatter trace as plotly writes it: the properties given, then its type."""
    return {**properties, "type": "scatter"}


def _finish(
    traces: list[dict[str, Any]], layout: dict[str, Any], *, empty: str = EMPTY
) -> dict[str, Any]:
    """The figure: traces and layout, with the "none" template as plotly expands it.

    With no trace there is nothing to read off axes: they are hidden and the chart says why.
    """
    if not traces:
        layout["annotations"] = [_note(empty, x=0.5, y=0.5, size=12)]
        for axis in ("xaxis", "yaxis", "yaxis2"):
            if axis in layout:
                layout[axis]["visible"] = False
    layout["template"] = {"data": {"scatter": [{"type": "scatter"}]}}
    return {"data": traces, "layout": layout}


def _note(text: str, *, size: int = 11, **position: Any) -> dict[str, Any]:
    """A grey annotation placed on the chart's paper (0–1 both ways), not on its data."""
    font = {"size": size, "color": NOISE}
    return dict(text=text, showarrow=False, xref="paper", yref="paper", font=font, **position)


def _sorted(points: Iterable[TrendPoint]) -> list[TrendPoint]:
    # In the order given: the skill's display order (generation time), not by number.
    return list(points)


def _condition(point: TrendPoint, name: str) -> ConditionPoint | None:
    return next((c for c in point.conditions if c.name == name), None)


def _condition_colours(points: list[TrendPoint]) -> dict[str, tuple[str, str]]:
    """Condition name → its colour on every page and a dash (charts.colours), treatment first."""
    return figure_colours([(c.name, c.role) for c in p.conditions] for p in points)


def _hover_row(point: TrendPoint, detail: str) -> list[str]:
    """customdata for one point: [page URL, iteration heading, escaped detail line]."""
    heading = _text(point.heading)
    if point.mode:
        heading += f" ({_text(point.mode)})"
    return [point.url, heading, detail]


def _value_text(
    name: str,
    value: float | None,
    low: float | None,
    high: float | None,
    show: Callable[[float], str],
) -> str:
    if value is None:
        return f"{_text(name)}: no data"
    ci = f"95% CI {show(low)} to {show(high)}" if low is not None and high is not None else ""
    return f"{_text(name)}: {show(value)} ({ci or NO_INTERVAL})"


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


def _rgba(hex_colour: str, alpha: float) -> str:
    red, green, blue = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def _text(value: str) -> str:
    """Return value with & < > as entities: plotly then draws it as typed, never as markup."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


#: The skill page's charts, by the name its template gives each.
CHARTS: dict[str, Callable[[Iterable[TrendPoint]], dict[str, Any]]] = {
    "score": score_trend_figure,
    "delta": delta_trend_figure,
    "invocation": invocation_trend_figure,
    "cost": cost_trend_figure,
}
