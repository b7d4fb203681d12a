"""The trend charts' traces: a condition's line and band, broken into segments, and the
figure around them. Shared by the skill page's trends (`figures`) and `triggers`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .colours import figure_colours
from .layout import escape, marker_size, note
from .points import ConditionPoint, TrendPoint, segments

HOVER = "%{customdata[1]}<br>%{customdata[2]}<extra></extra>"
NO_INTERVAL = "no interval"
#: The marker of each line style (charts.colours.DASHES).
MARKERS = {"solid": "circle", "dash": "square", "dot": "diamond", "dashdot": "x"}
EMPTY = "No data yet"


def line(
    name: str,
    style: tuple[str, str],
    points: Sequence[TrendPoint],
    values: list[float | None],
    details: list[str],
    starts: frozenset[int] = frozenset(),
    **extra: Any,
) -> dict[str, Any]:
    """A condition's line across iterations; None leaves a gap, as does a new segment
    starting at an index in `starts`; details are its hover lines.

    `style` is (colour, dash); a dashed line also gets its own marker shape, so a lone
    point of it is told from another condition of the same colour.
    """
    colour, dash = style
    xs, ys, rows = gapped(
        points, values, starts, [hover_row(p, d) for p, d in zip(points, details, strict=True)]
    )
    return scatter(
        x=xs,
        y=ys,
        name=escape(name),
        legendgroup=escape(name),
        mode="lines+markers",
        line={"color": colour, "width": 2, "dash": dash},
        marker={
            "color": colour,
            "size": marker_size(points, 7),
            "symbol": MARKERS.get(dash, "circle"),
        },
        customdata=rows,
        hovertemplate=HOVER,
        **extra,
    )


def gapped(
    points: Sequence[TrendPoint],
    values: list[float | None],
    starts: frozenset[int],
    rows: list[Any] | None = None,
) -> tuple[list[int | None], list[float | None], list[Any]]:
    """(x, y, customdata) of a line, a None point before each index in `starts`.

    A None x and y is a gap plotly never bridges, so one trace (one legend entry, one
    colour) draws every segment of a condition.
    """
    rows = rows if rows is not None else [None] * len(points)
    xs: list[int | None] = []
    ys: list[float | None] = []
    data: list[Any] = []
    for index, (point, value, row) in enumerate(zip(points, values, rows, strict=True)):
        if index in starts:
            xs.append(None)
            ys.append(None)
            data.append(None)
        xs.append(point.number)
        ys.append(value)
        data.append(row)
    return xs, ys, data


def band(
    name: str,
    colour: str,
    bounds: list[tuple[int, float | None, float | None]],
    starts: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """One closed shape per run of iterations with an interval: highs forward, lows back.

    A run ends where an iteration has no interval, and where a new segment starts.
    """
    xs: list[int | None] = []
    ys: list[float | None] = []
    pairs = [(lo, hi) if lo is not None and hi is not None else None for _, lo, hi in bounds]
    runs = [part for run in segments(pairs) for part in split(run, starts)]
    for run in runs:
        if xs:
            xs.append(None)  # a gap separates the shapes of one trace
            ys.append(None)
        xs += [bounds[i][0] for i, _ in run] + [bounds[i][0] for i, _ in reversed(run)]
        ys += [hi for _, (_, hi) in run] + [lo for _, (lo, _) in reversed(run)]
    return scatter(
        x=xs,
        y=ys,
        name=escape(f"{name} 95% CI"),
        legendgroup=escape(name),
        showlegend=False,
        mode="lines",
        fill="toself",
        fillcolor=rgba(colour, 0.18),
        # A thin edge, so a lone iteration's interval still shows, as a vertical bar.
        line={"color": rgba(colour, 0.45), "width": 1},
        hoverinfo="skip",
    )


def split(run: list[tuple[int, Any]], starts: frozenset[int]) -> list[list[tuple[int, Any]]]:
    """`run` (index, value) pairs cut before every index in `starts`."""
    parts: list[list[tuple[int, Any]]] = [[]]
    for index, value in run:
        if index in starts and parts[-1]:
            parts.append([])
        parts[-1].append((index, value))
    return parts


def scatter(**properties: Any) -> dict[str, Any]:
    """A scatter trace as plotly writes it: the properties given, then its type."""
    return {**properties, "type": "scatter"}


def finish(
    traces: list[dict[str, Any]], layout: dict[str, Any], *, empty: str = EMPTY
) -> dict[str, Any]:
    """The figure: traces and layout, with the "none" template as plotly expands it.

    With no trace there is nothing to read off axes: they are hidden, as are the break
    markers, and the chart says why.
    """
    if not traces:
        layout["annotations"] = [note(empty, x=0.5, y=0.5, size=12)]
        layout.pop("shapes", None)
        for name in ("xaxis", "yaxis", "yaxis2"):
            if name in layout:
                layout[name]["visible"] = False
    layout["template"] = {"data": {"scatter": [{"type": "scatter"}]}}
    return {"data": traces, "layout": layout}


def condition(point: TrendPoint, name: str) -> ConditionPoint | None:
    return next((c for c in point.conditions if c.name == name), None)


def condition_colours(points: list[TrendPoint]) -> dict[str, tuple[str, str]]:
    """Condition name → its colour on every page and a dash (charts.colours), treatment first."""
    return figure_colours([(c.name, c.role) for c in p.conditions] for p in points)


def hover_row(point: TrendPoint, detail: str) -> list[str]:
    """customdata for one point: [page URL, heading, escaped detail line].

    The heading is what the short tick leaves out: "#3 iteration-3 (revision) · 2026-05-01
    10:00", the folder's label, the mode and when it was generated.
    """
    heading = escape(point.heading)
    if point.mode:
        heading += f" ({escape(point.mode)})"
    if point.generated_at:
        heading += f" · {point.generated_at:%Y-%m-%d %H:%M}"
    return [point.url, heading, detail]


def value_detail(
    name: str,
    value: float | None,
    low: float | None,
    high: float | None,
    show: Callable[[float], str],
) -> str:
    if value is None:
        return f"{escape(name)}: no data"
    ci = f"95% CI {show(low)} to {show(high)}" if low is not None and high is not None else ""
    return f"{escape(name)}: {show(value)} ({ci or NO_INTERVAL})"


def rgba(hex_colour: str, alpha: float) -> str:
    red, green, blue = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"
