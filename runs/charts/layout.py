"""The trend charts' shared look: x axis of short "#N" ticks, heights, and the break markers.

Sized to stay readable from 1 to 100 iterations: tick labels are "#N", at most MAX_TICKS
of them (every k-th, the newest always labelled), never turned on their side; the plot
area keeps `PLOT_HEIGHT` under the legend; axis titles are a word or two (the figure's
caption says the rest), so they fit beside the plot they name. The server cannot know the
width a chart is drawn at: charts.js keeps fewer ticks on a narrow chart, and grows one
whose legend wrapped onto more rows than `LEGEND_WIDTH` gave it.

A break (charts.breaks) is a dotted vertical line between the two iterations, a short
label at its top ("model changed", the details on hover) and one legend entry,
"comparison changed". Labels sit inside the plot, in rows so that close breaks do not
overprint, above the data: the y range gains headroom for them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .breaks import Break
from .points import TrendPoint

#: The plot area's height in px, axes and legend not counted.
PLOT_HEIGHT = 220
#: Two stacked panels (tokens over seconds): each keeps room for its axis title.
COST_PLOT_HEIGHT = 340
MARGIN = {"l": 56, "r": 12, "t": 16, "b": 36}
#: A chart's height with a one-row legend: what the page reserves before plotly draws.
HEIGHT = PLOT_HEIGHT + MARGIN["t"] + MARGIN["b"] + 24
FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
GRID = "#e4e4e7"
TEXT = "#27272a"
MUTED = "#6e7781"
#: At most this many x tick labels; charts.js keeps fewer on a narrower chart.
MAX_TICKS = 20
#: The plot width the server lays out break labels for: a phone's (375 px less the page's
#: padding and the y axis); wider charts only have more room between them.
ASSUMED_WIDTH = 240
#: The width the legend's rows are counted at: a chart of the skill page's grid at 1366 px.
LEGEND_WIDTH = 400
#: Beyond this many iterations, markers shrink so that neighbours stay apart.
MANY_POINTS = 40
#: Beyond this many, a page gives each chart its whole width (the skill page's .wide).
WIDE_FROM = 30

#: Break labels: font size, one row's height in px, how many rows before they overprint.
LABEL_SIZE = 10
LABEL_ROW = 14
LABEL_ROWS = 3
BREAK_LEGEND = "comparison changed"


@dataclass(frozen=True)
class BreakMarkers:
    """A chart's break markers: a dotted line and a label per break, in `rows` label rows."""

    shapes: list[dict[str, Any]] = field(default_factory=list)
    annotations: list[dict[str, Any]] = field(default_factory=list)
    rows: int = 0

    @property
    def room(self) -> int:
        """The px the label rows take at the top of the plot."""
        return LABEL_ROW * self.rows + 4 if self.rows else 0

    def headroom(self, low: float, high: float, *, panel: float) -> list[float]:
        """[low, top]: `high` raised so the labels fit above it in a `panel` px tall plot."""
        if not self.rows:
            return [low, high]
        fraction = min(0.45, self.room / panel)
        return [low, low + (high - low) / (1 - fraction)]


def trend_layout(
    points: Sequence[TrendPoint],
    *,
    yaxis: dict[str, Any],
    markers: BreakMarkers | None = None,
    legend: Sequence[str] = (),
    plot_height: int = PLOT_HEIGHT,
) -> dict[str, Any]:
    """The layout of a trend of `points` (in the order given), with its break markers.

    `legend` holds the names of the legend's entries, for its height; `plot_height` is
    the plot area's before the break labels' rows are added to it.
    """
    markers = markers or BreakMarkers()
    vals, text = tick_labels(points)
    pad = len(points) / 100
    height = plot_height + markers.room + MARGIN["t"] + MARGIN["b"]
    layout = {
        "height": height + legend_height([*legend, *([BREAK_LEGEND] if markers.shapes else [])]),
        "autosize": True,
        "margin": dict(MARGIN),
        "font": {"family": FONT, "size": 12, "color": TEXT},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "hovermode": "closest",
        "hoverlabel": {"font": {"family": FONT}},
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        "xaxis": {
            **axis(),
            "type": "category",
            "categoryorder": "array",
            "categoryarray": [p.number for p in points],
            # Categories sit at 0…n−1: a fixed range, so plotly pads neither side for the
            # labels and markers, just enough that the outermost markers are not cut.
            "range": [-0.5 - pad, len(points) - 0.5 + pad],
            "tickmode": "array",
            "tickvals": vals,
            "ticktext": text,
            "tickangle": 0,
        },
        "yaxis": {**axis(), **yaxis},
    }
    if markers.shapes:  # plotly writes no empty lists back
        layout["shapes"] = markers.shapes
        layout["annotations"] = markers.annotations
    return layout


def axis() -> dict[str, Any]:
    # Fixed ranges: zooming into a handful of iterations only steals the page's scrolling.
    return dict(gridcolor=GRID, linecolor=GRID, zeroline=False, automargin=True, fixedrange=True)


def tick_labels(points: Sequence[TrendPoint]) -> tuple[list[int], list[str]]:
    """(tickvals, ticktext): every k-th iteration counted back from the newest, ≤ MAX_TICKS."""
    step = max(1, math.ceil(len(points) / MAX_TICKS))
    kept = list(range(len(points) - 1, -1, -step))[::-1]
    return [points[i].number for i in kept], [points[i].tick for i in kept]


def marker_size(points: Sequence[TrendPoint], size: int) -> int:
    """`size`, or a smaller one when so many iterations share the width."""
    return size if len(points) <= MANY_POINTS else max(4, round(size * 0.6))


def legend_height(names: Sequence[str]) -> int:
    """The px a horizontal legend of `names` takes above the plot at LEGEND_WIDTH."""
    if not names:
        return 0
    rows, used = 1, 0.0
    for name in names:
        width = 46 + 7 * len(name)  # sample line, gap, text at 12 px
        if used and used + width > LEGEND_WIDTH:
            rows, used = rows + 1, 0.0
        used += width
    return 24 + 19 * (rows - 1)


def break_markers(points: Sequence[TrendPoint], breaks: Sequence[Break]) -> BreakMarkers:
    """A dotted line and a label per break, between the two iterations it separates.

    A label goes right of its line (left of it near the plot's right edge), in the first
    row where it does not touch the one before it, at the widths of ASSUMED_WIDTH; with
    every row taken, in the row that frees up first.
    """
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    ends = [-math.inf] * LABEL_ROWS
    used = 0
    for brk in breaks:
        # Categories sit at 0, 1, 2…; the line goes halfway between the two iterations
        # (never a whole number, which plotly would read as a category's name).
        x = brk.index - 0.5
        at = (x + 0.5) / max(len(points), 1) * ASSUMED_WIDTH
        width = 4 + 6 * len(brk.label)
        # Right of the line, unless that runs off the plot: then left of it.
        anchor = "left" if at + width <= ASSUMED_WIDTH else "right"
        left, right = (at, at + width) if anchor == "left" else (at - width, at)
        free = [r for r in range(LABEL_ROWS) if ends[r] + 4 <= left]
        row = free[0] if free else min(range(LABEL_ROWS), key=lambda r: ends[r])
        ends[row] = right
        used = max(used, row + 1)
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": x,
                "x1": x,
                "y0": 0,
                "y1": 1,
                "line": {"color": MUTED, "width": 1.5, "dash": "dot"},
                "layer": "below",
                "name": BREAK_LEGEND,
                "legendgroup": "breaks",
                "showlegend": not shapes,
            }
        )
        annotations.append(
            {
                "text": brk.label,
                "hovertext": escape(brk.text),
                "x": x,
                "xref": "x",
                "xanchor": anchor,
                "y": 1,
                "yref": "paper",
                "yanchor": "top",
                "yshift": -LABEL_ROW * row,
                "showarrow": False,
                "font": {"size": LABEL_SIZE, "color": MUTED},
                "bgcolor": "rgba(255, 255, 255, 0.85)",
            }
        )
    return BreakMarkers(shapes, annotations, used)


def note(text: str, *, size: int = 11, **position: Any) -> dict[str, Any]:
    """A grey annotation placed on the chart's paper (0–1 both ways), not on its data."""
    font = {"size": size, "color": MUTED}
    return dict(text=text, showarrow=False, xref="paper", yref="paper", font=font, **position)


def escape(value: str) -> str:
    """Return value with & < > as entities: plotly then draws it as typed, never as markup."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
