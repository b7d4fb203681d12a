"""The axes page's trend: treatment − control per iteration, a line per harness × model.

Built like the skill page's delta chart (figures.delta_trend_figure): the same x axis of
"#N" ticks over the mode's iterations, the same symmetric Δ axis about a drawn zero line,
the same hover text and escaping; each combination a colour (and, past the palette, a dash)
of its own, named in the legend, its points joined in the order they ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .colours import DASHES, PALETTE
from .figures import _delta_text
from .layout import PLOT_HEIGHT, TEXT, escape, marker_size, trend_layout
from .points import TrendPoint
from .traces import HOVER, finish, hover_row, scatter


def combination_style(index: int) -> tuple[str, str]:
    """(colour, dash) of the `index`-th combination: the palette, then again dashed."""
    return PALETTE[index % len(PALETTE)], DASHES[(index // len(PALETTE)) % len(DASHES)]


def axes_trend_figure(
    points: Sequence[TrendPoint], lines: Sequence[tuple[str, Sequence[TrendPoint]]]
) -> dict[str, Any]:
    """Each (name, its points) a line of deltas with their 95% intervals, over `points`."""
    traces: list[dict[str, Any]] = []
    size = marker_size(points, 8)
    bounds: list[float] = []
    for index, (name, own) in enumerate(lines):
        with_delta = [p for p in own if p.delta is not None]
        if not with_delta:
            continue
        colour, dash = combination_style(index)
        bounds += [v for p in with_delta for v in (p.delta.mean, p.delta.low, p.delta.high)]
        traces.append(
            scatter(
                x=[p.number for p in with_delta],
                y=[p.delta.mean for p in with_delta],
                name=escape(name),
                mode="lines+markers",
                line={"color": colour, "width": 2, "dash": dash},
                marker={"color": colour, "size": size},
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=[_gap(p.delta.high, p.delta.mean) for p in with_delta],
                    arrayminus=[_gap(p.delta.mean, p.delta.low) for p in with_delta],
                    color=colour,
                    thickness=1.5,
                    width=3,
                ),
                customdata=[hover_row(p, f"{escape(name)}: {_delta_text(p)}") for p in with_delta],
                hovertemplate=HOVER,
            )
        )
    reach = max((abs(v) for v in bounds if v is not None), default=0.0)
    limit = min(1.05, max(0.25, reach * 1.15))
    layout = trend_layout(
        points,
        yaxis={
            "title": {"text": "Δ score"},
            "range": [-limit, limit],
            "tickformat": "+.2f",
            "zeroline": True,
            "zerolinecolor": TEXT,
            "zerolinewidth": 1.5,
        },
        legend=[t["name"] for t in traces],
        plot_height=PLOT_HEIGHT,
    )
    # A lone combination keeps its legend entry: the name says what the line measured.
    layout["showlegend"] = bool(traces)
    return finish(traces, layout, empty="No deltas to chart: no iteration compared two conditions")


def _gap(upper: float | None, lower: float | None) -> float | None:
    return None if upper is None or lower is None else max(upper - lower, 0.0)
