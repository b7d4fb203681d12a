"""Trend charts for a skill's page (SPEC §5), as pure functions from plain rows to figures.

Each `*_figure` function takes `TrendPoint`s (one per iteration) and returns a plotly figure
as a JSON-safe dict, ready for `{{ figure|json_script:"id" }}` and `static/js/charts.js`. The
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

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from .stats.intervals import Interval
from .stats.rows import condition_role
from .stats.scores import ConditionScore, PairedDelta, Proportion
from .stats.verdicts import format_interval, signed, unsigned

Role = Literal["treatment", "control", "other"]
T = TypeVar("T")

HEIGHT = 260
COST_HEIGHT = 320  # two stacked panels need a little more room than one
FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
GRID = "#e4e4e7"
TEXT = "#27272a"
# Okabe–Ito: distinguishable with the common colour-vision deficiencies. Treatment comes
# first, control second, so with_skill is blue and without_skill orange on every page.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")
HELPS, HURTS, NOISE = "#1a7f37", "#cf222e", "#6e7781"
HOVER = "%{customdata[1]}<br>%{customdata[2]}<extra></extra>"
NO_INTERVAL = "no interval"
ROLE_ORDER = {"treatment": 0, "control": 1, "other": 2}


@dataclass(frozen=True)
class ConditionPoint:
    """One condition's numbers in one iteration; None where there is nothing to show."""

    name: str
    role: Role = "other"
    score: float | None = None
    low: float | None = None
    high: float | None = None
    invocation: float | None = None
    invocation_low: float | None = None
    invocation_high: float | None = None
    mean_tokens: float | None = None
    mean_duration_ms: float | None = None

    @classmethod
    def from_stats(
        cls,
        name: str,
        *,
        score: ConditionScore | None = None,
        invocation: Proportion | None = None,
        mean_tokens: float | None = None,
        mean_duration_ms: float | None = None,
        role: Role | None = None,
    ) -> ConditionPoint:
        """Return the point for a condition from its statistics (role from its name)."""
        score_ci = score.interval if score else None
        invocation_ci = invocation.interval if invocation else None
        return cls(
            name=name,
            role=role or condition_role(name) or "other",
            score=score.mean if score else None,
            low=score_ci.low if score_ci else None,
            high=score_ci.high if score_ci else None,
            invocation=invocation.rate if invocation else None,
            invocation_low=invocation_ci.low if invocation_ci else None,
            invocation_high=invocation_ci.high if invocation_ci else None,
            mean_tokens=mean_tokens,
            mean_duration_ms=mean_duration_ms,
        )


@dataclass(frozen=True)
class DeltaPoint:
    """treatment − control in one iteration, with its interval when there is one."""

    mean: float
    low: float | None = None
    high: float | None = None

    @classmethod
    def from_paired(cls, delta: PairedDelta | None) -> DeltaPoint | None:
        """Return the point for a paired delta, None for none."""
        if delta is None:
            return None
        ci = delta.interval
        return cls(delta.mean, ci.low if ci else None, ci.high if ci else None)


@dataclass(frozen=True)
class TrendPoint:
    """One iteration of a skill, as the trend charts see it."""

    number: int
    label: str
    mode: str = ""
    conditions: tuple[ConditionPoint, ...] = ()
    delta: DeltaPoint | None = None
    significant: bool = False
    url: str = ""


def figure_json(figure: Mapping[str, Any]) -> str:
    """Return the figure as JSON that is safe inside a <script> element."""
    text = json.dumps(figure)
    # These characters only occur inside JSON strings, where the escapes mean the same.
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
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
    return _banded_trend(
        _sorted(points),
        lambda c: (c.invocation, c.invocation_low, c.invocation_high),
        value_text=lambda v: f"{v:.0%}",
        yaxis={"title": {"text": "Skill invoked"}, "range": [0, 1.02], "tickformat": ".0%"},
    )


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
    # Whatever is not clearly up or down is noise, so no point can fall between the classes.
    classes = (
        ("Skill helps", HELPS, "triangle-up", lambda d, s: s and d.mean > 0),
        ("Skill hurts", HURTS, "triangle-down", lambda d, s: s and d.mean < 0),
        ("Not distinguishable from noise", NOISE, "circle-open", lambda d, s: not s or d.mean == 0),
    )
    for name, colour, symbol, belongs in classes:
        members = [p for p in with_delta if belongs(p.delta, p.significant)]
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
                customdata=[_hover_row(p, _delta_text(p.delta, p.significant)) for p in members],
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
    for name, colour in _condition_colours(ordered).items():
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
                _line(name, colour, ordered, values, details, yaxis=yaxis, showlegend=legend)
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
    return _finish(traces, layout)


def _banded_trend(
    points: list[TrendPoint],
    pick: Callable[[ConditionPoint], tuple[float | None, float | None, float | None]],
    *,
    value_text: Callable[[float], str],
    yaxis: dict[str, Any],
) -> dict[str, Any]:
    """A line per condition with a value, each with a shaded band between low and high."""
    traces: list[dict[str, Any]] = []
    for name, colour in _condition_colours(points).items():
        rows = [(p, pick(c) if (c := _condition(p, name)) else (None, None, None)) for p in points]
        if all(value is None for _, (value, _, _) in rows):
            continue
        traces.append(_band(name, colour, [(p.number, lo, hi) for p, (_, lo, hi) in rows]))
        details = [_value_text(name, value, lo, hi, value_text) for _, (value, lo, hi) in rows]
        traces.append(_line(name, colour, points, [v for _, (v, _, _) in rows], details))
    return _finish(traces, _layout(points, yaxis=yaxis))


def _line(
    name: str,
    colour: str,
    points: list[TrendPoint],
    values: list[float | None],
    details: list[str],
    **extra: Any,
) -> dict[str, Any]:
    """A condition's line across iterations; None leaves a gap, details are its hover lines."""
    return _scatter(
        x=[p.number for p in points],
        y=values,
        name=_text(name),
        legendgroup=_text(name),
        mode="lines+markers",
        line={"color": colour, "width": 2},
        marker={"color": colour, "size": 6},
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
            "ticktext": [f"#{p.number} {_text(p.label)}" for p in points],
        },
        "yaxis": {**_axis(), **yaxis},
    }


def _axis() -> dict[str, Any]:
    # Fixed ranges: zooming into a handful of iterations only steals the page's scrolling.
    return dict(gridcolor=GRID, linecolor=GRID, zeroline=False, automargin=True, fixedrange=True)


def _scatter(**properties: Any) -> dict[str, Any]:
    """A scatter trace as plotly writes it: the properties given, then its type."""
    return {**properties, "type": "scatter"}


def _finish(traces: list[dict[str, Any]], layout: dict[str, Any]) -> dict[str, Any]:
    """The figure: traces and layout, with the "none" template as plotly expands it."""
    if not traces:
        layout["annotations"] = [_note("No data yet", x=0.5, y=0.5, size=12)]
    layout["template"] = {"data": {"scatter": [{"type": "scatter"}]}}
    return {"data": traces, "layout": layout}


def _note(text: str, *, size: int = 11, **position: Any) -> dict[str, Any]:
    """A grey annotation placed on the chart's paper (0–1 both ways), not on its data."""
    font = {"size": size, "color": NOISE}
    return dict(text=text, showarrow=False, xref="paper", yref="paper", font=font, **position)


def _sorted(points: Iterable[TrendPoint]) -> list[TrendPoint]:
    return sorted(points, key=lambda p: p.number)


def _condition(point: TrendPoint, name: str) -> ConditionPoint | None:
    return next((c for c in point.conditions if c.name == name), None)


def _condition_colours(points: list[TrendPoint]) -> dict[str, str]:
    """Condition name → colour: treatments first, then controls, then others, as first seen."""
    roles: dict[str, Role] = {}
    for point in points:
        for condition in point.conditions:
            roles.setdefault(condition.name, condition.role)
    order = sorted(roles, key=lambda name: ROLE_ORDER.get(roles[name], 2))
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(order)}


def _hover_row(point: TrendPoint, detail: str) -> list[str]:
    """customdata for one point: [page URL, iteration heading, escaped detail line]."""
    heading = f"#{point.number} {_text(point.label)}"
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


def _delta_text(delta: DeltaPoint, significant: bool) -> str:
    if delta.low is None or delta.high is None:
        ci = NO_INTERVAL
    else:
        ci = f"95% CI {format_interval(Interval(delta.low, delta.high))}"
    if not significant or delta.mean == 0:
        verdict = "not distinguishable from noise"
    else:
        verdict = "skill helps" if delta.mean > 0 else "skill hurts"
    return f"Δ {signed(delta.mean)} ({ci}): {verdict}"


def _above(mean: float, high: float | None) -> float | None:
    return None if high is None else max(high - mean, 0.0)


def _below(mean: float, low: float | None) -> float | None:
    return None if low is None else max(mean - low, 0.0)


def _seconds(milliseconds: float | None) -> float | None:
    return None if milliseconds is None else milliseconds / 1000.0


def finite_or_none(value: float | None) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def segments(values: Sequence[T | None]) -> list[list[tuple[int, T]]]:
    """Runs of consecutive non-None values, each as (index, value) pairs."""
    runs: list[list[tuple[int, T]]] = [[]]
    for index, value in enumerate(values):
        if value is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((index, value))
    return [run for run in runs if run]


def _rgba(hex_colour: str, alpha: float) -> str:
    red, green, blue = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def _text(value: str) -> str:
    """Return value with & < > as entities: plotly then draws it as typed, never as markup."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
