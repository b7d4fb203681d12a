"""Charts as pure functions from plain rows to figures: the skill page's trends (SPEC §5)
and the overview's sparklines.

- `points`: what a chart reads about one iteration (`TrendPoint`, `ConditionPoint`, …);
- `figures`: plotly figures as JSON-safe dicts, for `json_script` and static/js/charts.js,
  drawn from `traces` (lines and bands in segments) on `layout` (ticks, heights, markers);
- `breaks`: where neighbouring iterations stop being comparable (mode, model, harness,
  eval set): lines break there, with a marker, and the tables mark the row;
- `tables`: the same numbers as tables, shown without JavaScript (and a click away with it);
- `colours`: one colour per condition across the whole site;
- `sparklines`: the overview's tiny inline SVGs of recent deltas (no plotly);
- `triggers`: the Triggering panel's recall and false-trigger rate per description.
"""

from __future__ import annotations

from .breaks import Break, Change, comparison_breaks
from .colours import PALETTE, condition_colour, figure_colours
from .figures import (
    CHARTS,
    cost_trend_figure,
    delta_trend_figure,
    invocation_trend_figure,
    score_trend_figure,
)
from .layout import HEIGHT, MAX_TICKS, PLOT_HEIGHT, WIDE_FROM
from .points import ConditionPoint, DeltaPoint, TrendPoint, finite_or_none, segments
from .tables import ChartRow, ChartTable, chart_tables
from .traces import HOVER
from .triggers import trigger_trend_figure, trigger_trend_table

__all__ = [
    "CHARTS",
    "HEIGHT",
    "HOVER",
    "MAX_TICKS",
    "PALETTE",
    "PLOT_HEIGHT",
    "WIDE_FROM",
    "Break",
    "Change",
    "ChartRow",
    "ChartTable",
    "ConditionPoint",
    "DeltaPoint",
    "TrendPoint",
    "chart_tables",
    "comparison_breaks",
    "condition_colour",
    "cost_trend_figure",
    "delta_trend_figure",
    "figure_colours",
    "finite_or_none",
    "invocation_trend_figure",
    "score_trend_figure",
    "segments",
    "trigger_trend_figure",
    "trigger_trend_table",
]
