"""Trend charts and sparklines: pure functions over plain rows, tested without a database."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from django.utils.html import json_script

from runs.charts import (
    CHARTS,
    HEIGHT,
    HOVER,
    MAX_TICKS,
    PALETTE,
    PLOT_HEIGHT,
    ConditionPoint,
    DeltaPoint,
    TrendPoint,
    chart_tables,
    comparison_breaks,
    condition_colour,
    cost_trend_figure,
    delta_trend_figure,
    figure_colours,
    invocation_trend_figure,
    score_trend_figure,
    trigger_trend_figure,
    trigger_trend_table,
)
from runs.charts.sparklines import sparkline_svg
from runs.stats.intervals import Interval
from runs.stats.scores import ConditionScore, PairedDelta, Proportion

HOSTILE = "</script><img src=x onerror=alert(1)>"
SVG = "{http://www.w3.org/2000/svg}"


def with_skill(score: float | None, low: float | None, high: float | None, **kw: Any):
    return ConditionPoint("with_skill", "treatment", score, low, high, **kw)


def without_skill(score: float | None, low: float | None, high: float | None, **kw: Any):
    return ConditionPoint("without_skill", "control", score, low, high, **kw)


def point(number: int, *conditions: ConditionPoint, **kw: Any) -> TrendPoint:
    kw.setdefault("label", f"label-{number}")
    kw.setdefault("url", f"/skills/demo/iterations/{number}/")
    return TrendPoint(number=number, conditions=conditions, **kw)


def trace(figure: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [t for t in figure["data"] if t.get("name") == name]
    return found


def band_segments(band: dict[str, Any]) -> list[list[tuple[Any, float]]]:
    """Split a band trace at its None gaps into its closed shapes."""
    segments: list[list[tuple[Any, float]]] = [[]]
    for x, y in zip(band["x"], band["y"], strict=True):
        if x is None:
            segments.append([])
        else:
            segments[-1].append((x, y))
    return segments


THREE_ITERATIONS = [
    point(
        3,
        with_skill(0.8, 0.6, 0.95),
        without_skill(0.5, 0.3, 0.7),
        delta=DeltaPoint(0.3, 0.1, 0.5),
        signal="significant",
    ),
    point(
        4,
        with_skill(0.7, None, None),
        without_skill(0.6, 0.4, 0.8),
        delta=DeltaPoint(0.1, -0.2, 0.4),
    ),
    point(
        5,
        with_skill(0.9, 0.8, 1.0),
        without_skill(0.4, 0.2, 0.6),
        delta=DeltaPoint(0.5, 0.3, 0.7),
        signal="significant",
    ),
]


class TestScoreTrend:
    def test_it_draws_each_condition_at_its_scores_per_iteration(self):
        figure = score_trend_figure(THREE_ITERATIONS)
        assert trace(figure, "with_skill")["x"] == [3, 4, 5]
        assert trace(figure, "with_skill")["y"] == [0.8, 0.7, 0.9]
        assert trace(figure, "without_skill")["y"] == [0.5, 0.6, 0.4]
        assert figure["layout"]["yaxis"]["range"][0] == 0
        assert figure["layout"]["height"] == HEIGHT  # one legend row, no breaks

    def test_its_band_runs_along_high_and_back_along_low(self):
        band = trace(score_trend_figure(THREE_ITERATIONS), "without_skill 95% CI")
        assert band["fill"] == "toself"
        assert band["hoverinfo"] == "skip"
        assert band_segments(band) == [
            [(3, 0.7), (4, 0.8), (5, 0.6), (5, 0.2), (4, 0.4), (3, 0.3)],
        ]

    def test_its_band_skips_iterations_without_an_interval(self):
        band = trace(score_trend_figure(THREE_ITERATIONS), "with_skill 95% CI")
        # Iteration 4 has no interval: one shape for #3, another for #5, nothing at #4.
        assert band_segments(band) == [[(3, 0.95), (3, 0.6)], [(5, 1.0), (5, 0.8)]]

    def test_a_condition_missing_from_an_iteration_leaves_a_gap(self):
        points = [
            point(1, with_skill(0.5, 0.4, 0.6), without_skill(0.2, 0.1, 0.3)),
            point(2, with_skill(0.6, 0.5, 0.7)),
            point(3, with_skill(None, None, None), without_skill(0.4, None, None)),
        ]
        figure = score_trend_figure(points)
        assert trace(figure, "with_skill")["y"] == [0.5, 0.6, None]
        assert trace(figure, "without_skill")["y"] == [0.2, None, 0.4]
        assert band_segments(trace(figure, "without_skill 95% CI")) == [[(1, 0.3), (1, 0.1)]]

    def test_the_x_axis_reads_short_numbers_in_the_order_given(self):
        # Display order is generation time, which need not follow the numbers.
        points = [point(10, with_skill(0.5, None, None)), point(2, with_skill(0.4, None, None))]
        figure = score_trend_figure(points)
        xaxis = figure["layout"]["xaxis"]
        assert xaxis["type"] == "category"
        assert xaxis["categoryarray"] == [10, 2]
        assert xaxis["tickvals"] == [10, 2]
        assert xaxis["ticktext"] == ["#10", "#2"]
        assert xaxis["tickangle"] == 0
        assert trace(figure, "with_skill")["x"] == [10, 2]

    def test_hovering_shows_the_iteration_and_the_score_with_its_interval(self):
        line = trace(score_trend_figure(THREE_ITERATIONS), "with_skill")
        url, heading, detail = line["customdata"][0]
        assert url == "/skills/demo/iterations/3/"
        assert heading == "#3 label-3"  # the label the short tick leaves out
        assert detail == "with_skill: 0.80 (95% CI 0.60 to 0.95)"
        assert line["customdata"][1][2] == "with_skill: 0.70 (no interval)"
        assert "%{customdata[1]}" in line["hovertemplate"]
        assert "%{customdata[2]}" in line["hovertemplate"]

    def test_treatment_and_control_keep_their_colours_whatever_the_order(self):
        figure = score_trend_figure(
            [point(1, without_skill(0.2, None, None), with_skill(0.5, None, None))]
        )
        assert trace(figure, "with_skill")["line"]["color"] == "#0072B2"
        assert trace(figure, "without_skill")["line"]["color"] == "#E69F00"


class TestDeltaTrend:
    def test_its_error_bars_reach_from_the_mean_to_the_interval_bounds(self):
        figure = delta_trend_figure(THREE_ITERATIONS)
        helps = trace(figure, "significant: skill helps")
        assert helps["x"] == [3, 5]
        assert helps["y"] == [0.3, 0.5]
        assert helps["error_y"]["symmetric"] is False
        assert helps["error_y"]["array"] == pytest.approx([0.2, 0.2])
        assert helps["error_y"]["arrayminus"] == pytest.approx([0.2, 0.2])

    def test_asymmetric_intervals_give_asymmetric_bars(self):
        figure = delta_trend_figure([point(1, delta=DeltaPoint(0.1, -0.05, 0.6))])
        bars = trace(figure, "noise")["error_y"]
        assert bars["array"] == pytest.approx([0.5])
        assert bars["arrayminus"] == pytest.approx([0.15])

    def test_markers_use_the_three_verdicts_of_the_badges(self):
        points = [
            point(1, delta=DeltaPoint(0.3, 0.1, 0.5), signal="significant"),
            point(2, delta=DeltaPoint(-0.3, -0.5, -0.1), signal="significant"),
            point(3, delta=DeltaPoint(0.1, -0.2, 0.4)),
            point(4, delta=DeltaPoint(0.4, 0.1, 0.7), signal="suggestive"),
        ]
        figure = delta_trend_figure(points)
        helps = trace(figure, "significant: skill helps")
        hurts = trace(figure, "significant: skill hurts")
        suggestive = trace(figure, "suggestive: skill helps")
        noise = trace(figure, "noise")
        assert (helps["x"], hurts["x"], noise["x"], suggestive["x"]) == ([1], [2], [3], [4])
        colours = {t["marker"]["color"] for t in (helps, hurts, noise, suggestive)}
        assert len(colours) == 4
        assert (
            helps["customdata"][0][2] == "Δ +0.30 (95% CI +0.10 to +0.50): significant: skill helps"
        )
        assert suggestive["customdata"][0][2].endswith("suggestive: skill helps")
        assert noise["customdata"][0][2].endswith("noise: not distinguishable from chance")

    def test_an_iteration_its_badge_calls_suggestive_is_never_drawn_as_significant(self):
        figure = delta_trend_figure(
            [point(1, delta=DeltaPoint(0.47, 0.11, 0.83), signal="suggestive")]
        )
        assert [t["name"] for t in figure["data"] if t.get("mode") == "markers"] == [
            "suggestive: skill helps"
        ]

    def test_up_means_the_skill_helps(self):
        figure = delta_trend_figure(THREE_ITERATIONS)
        yaxis = figure["layout"]["yaxis"]
        assert yaxis["zeroline"] is True
        low, high = yaxis["range"]
        assert low == -high and high >= 0.7
        assert yaxis["title"]["text"] == "Δ score"  # the caption says treatment − control
        notes = {
            a["text"]: (a["yref"], a["y"], a["yanchor"]) for a in figure["layout"]["annotations"]
        }
        # Either side of the zero line.
        assert notes == {"▲ skill helps": ("y", 0, "bottom"), "▼ skill hurts": ("y", 0, "top")}

    def test_every_delta_gets_a_marker(self):
        points = [point(1, delta=DeltaPoint(0.0, 0.0, 0.0), signal="significant")]
        assert trace(delta_trend_figure(points), "noise")["x"] == [1]

    def test_iterations_without_a_delta_or_an_interval_do_not_crash(self):
        points = [point(1), point(2, delta=DeltaPoint(0.2)), point(3, delta=None)]
        figure = delta_trend_figure(points)
        noise = trace(figure, "noise")
        assert noise["x"] == [2]
        assert noise["error_y"]["array"] == [None]
        assert (
            noise["customdata"][0][2]
            == "Δ +0.20 (no interval): noise: not distinguishable from chance"
        )


class TestInvocationTrend:
    def test_it_plots_only_conditions_with_an_invocation_rate_in_percent(self):
        points = [
            point(1, with_skill(0.5, None, None, invocation=0.9, invocation_low=0.6,
                                invocation_high=0.98), without_skill(0.4, None, None)),
            point(2, with_skill(0.6, None, None, invocation=0.5, invocation_low=0.3,
                                invocation_high=0.7)),
        ]  # fmt: skip
        figure = invocation_trend_figure(points)
        assert [t["name"] for t in figure["data"]] == ["with_skill 95% CI", "with_skill"]
        assert trace(figure, "with_skill")["y"] == [0.9, 0.5]
        assert band_segments(trace(figure, "with_skill 95% CI")) == [
            [(1, 0.98), (2, 0.7), (2, 0.3), (1, 0.6)]
        ]
        assert figure["layout"]["yaxis"]["tickformat"] == ".0%"
        assert trace(figure, "with_skill")["customdata"][0][2] == (
            "with_skill: 90% (95% CI 60% to 98%)"
        )


class TestCostTrend:
    def test_it_plots_mean_tokens_and_seconds_per_condition(self):
        points = [
            point(1, with_skill(None, None, None, mean_tokens=12000, mean_duration_ms=30000),
                  without_skill(None, None, None, mean_tokens=9000, mean_duration_ms=None)),
            point(2, with_skill(None, None, None, mean_tokens=15000, mean_duration_ms=45500)),
        ]  # fmt: skip
        figure = cost_trend_figure(points)
        tokens, seconds = [t for t in figure["data"] if t["name"] == "with_skill"]
        assert (tokens["yaxis"], tokens["y"]) == ("y", [12000, 15000])
        assert (seconds["yaxis"], seconds["y"]) == ("y2", [30.0, 45.5])
        assert seconds["showlegend"] is False  # one legend entry per condition
        control_tokens, control_seconds = [
            t for t in figure["data"] if t["name"] == "without_skill"
        ]
        assert control_tokens["y"] == [9000, None]
        assert control_seconds["y"] == [None, None]
        assert tokens["customdata"][0][2] == "with_skill: 12,000 tokens"
        assert seconds["customdata"][1][2] == "with_skill: 45.5 s"


@pytest.mark.parametrize(
    "build", [score_trend_figure, delta_trend_figure, invocation_trend_figure, cost_trend_figure]
)
class TestEveryFigure:
    def test_no_iterations_give_an_empty_figure_that_says_so(self, build):
        figure = build([])
        assert figure["data"] == []
        assert figure["layout"]["annotations"][-1]["text"] == "No data yet"

    def test_it_is_plain_json(self, build):
        figure = build(THREE_ITERATIONS)
        assert json.loads(json.dumps(figure)) == figure
        assert "meta" not in figure["layout"]

    def test_text_from_users_is_data_never_markup(self, build):
        points = [
            point(
                1,
                ConditionPoint(HOSTILE, "treatment", 0.5, 0.4, 0.6, 0.5, 0.4, 0.6, 100, 1000),
                label=HOSTILE,
                mode=HOSTILE,
                delta=DeltaPoint(0.1, 0.0, 0.2),
            ),
            point(2, delta=DeltaPoint(0.2, 0.1, 0.3), signal="significant"),
        ]
        figure = build(points)
        for text in (str(json_script(figure, "f")),):
            assert "</script><img" not in text
            assert "<img" not in text
        # The only markup is the charts' own hover template; the label reaches plotly as data,
        # its markup characters as entities so plotly shows them instead of reading tags.
        escaped = "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
        assert {text for key, text in strings(figure) if "<" in text} <= {HOVER}
        assert {key for key, text in strings(figure) if text == HOVER} <= {"hovertemplate"}
        headings = {row[0]: row[1] for t in figure["data"] for row in t.get("customdata", [])}
        assert headings["/skills/demo/iterations/1/"] == f"#1 {escaped} ({escaped})"
        assert figure["layout"]["xaxis"]["ticktext"][0] == "#1"
        if build is not delta_trend_figure:
            assert escaped in {t.get("name") for t in figure["data"]}

    def test_plotly_validates_it_and_writes_it_back_unchanged(self, build):
        # The figures are built as dicts, without plotly: plotly itself checks every
        # property and must write the very same figure back.
        import plotly.graph_objects as go
        import plotly.io as pio

        hostile = [point(1, ConditionPoint(HOSTILE, "other", 0.5, 0.4, 0.6), label=HOSTILE)]
        for points in ([], THREE_ITERATIONS, hostile):
            figure = build(points)
            assert json.loads(pio.to_json(go.Figure(figure), validate=True)) == figure


def strings(value: Any, key: str = "") -> list[tuple[str, str]]:
    """Every string in a figure, with the key it sits under."""
    if isinstance(value, str):
        return [(key, value)]
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in strings(v, k)]
    if isinstance(value, list):
        return [pair for v in value for pair in strings(v, key)]
    return []


class TestJsonScript:
    def test_the_page_writes_figures_with_json_script_that_never_closes_the_script(self):
        figure = {"data": [{"type": "scatter", "name": HOSTILE, "text": ["a & b"]}], "layout": {}}
        text = str(json_script(figure, "f"))
        inner = text[text.index(">") + 1 : text.rindex("</script>")]
        assert "</" not in inner and "<" not in inner and ">" not in inner and "&" not in inner
        assert json.loads(inner) == figure


class TestFromStats:
    def test_a_condition_point_takes_score_and_invocation_with_their_intervals(self):
        condition = ConditionPoint.from_stats(
            "with_skill",
            score=ConditionScore("with_skill", 0.8, 5, 15, 0.05, Interval(0.65, 0.95)),
            invocation=Proportion(9, 10, Interval(0.6, 0.98)),
            mean_tokens=1200.0,
        )
        assert condition == ConditionPoint(
            "with_skill", "treatment", 0.8, 0.65, 0.95, 0.9, 0.6, 0.98, 1200.0, None
        )

    def test_a_condition_point_without_numbers_has_none(self):
        condition = ConditionPoint.from_stats("baseline", score=None, invocation=None)
        assert condition == ConditionPoint("baseline", "other")

    def test_a_delta_point_takes_a_paired_delta(self):
        paired = PairedDelta("with_skill", "without_skill", 0.3, 4, 0.1, Interval(0.1, 0.5), 0.1)
        assert DeltaPoint.from_paired(paired) == DeltaPoint(0.3, 0.1, 0.5)
        single = PairedDelta("with_skill", "without_skill", 0.3, 1, None, None, 1.0)
        assert DeltaPoint.from_paired(single) == DeltaPoint(0.3)
        assert DeltaPoint.from_paired(None) is None


def trend(n: int, **changes: Any) -> list[TrendPoint]:
    """n iterations with a delta each, on one model, harness and eval set; `changes` maps
    a field to {iteration number: value from then on}."""
    points = []
    for number in range(1, n + 1):
        fields: dict[str, Any] = {
            "mode": "new-skill",
            "agent_model": "claude-haiku-4-5",
            "harness": "claude-code",
            "evals": frozenset({"alpha", "beta"}),
        }
        for name, steps in changes.items():
            for start, value in steps.items():
                if number >= start:
                    fields[name] = value
        points.append(
            point(
                number,
                with_skill(0.8, 0.6, 0.9, invocation=0.9, mean_tokens=1000, mean_duration_ms=2000),
                without_skill(0.5, 0.4, 0.6, mean_tokens=900, mean_duration_ms=1500),
                delta=DeltaPoint(0.3, 0.1, 0.5),
                **fields,
            )
        )
    return points


def runs_of(values: list[Any]) -> list[list[Any]]:
    """A line's values cut at its None gaps."""
    parts: list[list[Any]] = [[]]
    for value in values:
        if value is None:
            parts.append([])
        else:
            parts[-1].append(value)
    return [p for p in parts if p]


class TestBreaks:
    @pytest.mark.parametrize(
        ("field", "before", "after", "label", "detail"),
        [
            ("mode", "new-skill", "revision", "mode changed", "mode new-skill → revision"),
            ("agent_model", "claude-haiku-4-5", "claude-sonnet-4-6", "model changed",
             "agent model claude-haiku-4-5 → claude-sonnet-4-6"),
            ("harness", "claude-code", "messages-api", "harness changed",
             "harness claude-code → messages-api"),
            ("evals", frozenset({"alpha", "beta"}), frozenset({"alpha", "gamma", "delta"}),
             "evals changed", "eval set: 2 added, 1 removed (2 → 3 evals)"),
        ],
    )  # fmt: skip
    def test_a_change_between_neighbours_breaks_the_trend_there(
        self, field, before, after, label, detail
    ):
        points = trend(5, **{field: {1: before, 4: after}})
        (only,) = comparison_breaks(points)
        assert (only.index, only.number, only.label) == (3, 4, label)
        assert only.detail == detail
        assert only.text == f"#4: {label} ({detail})"

    def test_nothing_changing_breaks_nothing(self):
        points = trend(30)
        assert comparison_breaks(points) == []
        for build in CHARTS.values():
            figure = build(points)
            assert "shapes" not in figure["layout"]
            for t in figure["data"]:
                assert None not in t["x"] or t.get("fill") == "toself", t.get("name")
        assert all(not t.breaks for t in chart_tables(points).values())

    def test_what_was_not_recorded_is_not_a_change(self):
        points = trend(4, agent_model={3: ""}, harness={2: ""}, evals={4: frozenset()})
        assert comparison_breaks(points) == []

    def test_changes_at_once_are_one_break_naming_each(self):
        points = trend(3, agent_model={3: "claude-opus-4-1"}, harness={3: "messages-api"})
        (only,) = comparison_breaks(points)
        assert only.label == "model, harness changed"

    def test_every_line_breaks_there_and_a_dotted_line_marks_it(self):
        points = trend(6, mode={4: "revision"})
        for name, build in CHARTS.items():
            figure = build(points)
            lines = [t for t in figure["data"] if "lines" in t["mode"] and t.get("fill") is None]
            assert lines, name
            for line in lines:
                assert runs_of(line["x"]) == [[1, 2, 3], [4, 5, 6]], (name, line.get("name"))
            (shape,) = figure["layout"]["shapes"]
            # Halfway between #3 and #4 (categories 2 and 3), from the plot's bottom to top.
            assert (shape["x0"], shape["x1"], shape["yref"], shape["y0"], shape["y1"]) == (
                2.5, 2.5, "paper", 0, 1
            )  # fmt: skip
            assert shape["line"]["dash"] == "dot"
            assert (shape["showlegend"], shape["name"]) == (True, "comparison changed")
            (label,) = [a for a in figure["layout"]["annotations"] if a.get("x") == 2.5]
            assert label["text"] == "mode changed"
            assert label["hovertext"] == "#4: mode changed (mode new-skill → revision)"
            assert label.get("textangle", 0) == 0

    def test_bands_break_there_too(self):
        band = trace(score_trend_figure(trend(4, harness={3: "messages-api"})), "with_skill 95% CI")
        assert [[x for x, _ in shape] for shape in band_segments(band)] == [
            [1, 2, 2, 1],
            [3, 4, 4, 3],
        ]

    def test_one_legend_entry_for_every_break(self):
        points = trend(9, mode={4: "revision"}, agent_model={7: "claude-opus-4-1"})
        shapes = score_trend_figure(points)["layout"]["shapes"]
        assert [s["showlegend"] for s in shapes] == [True, False]
        assert {s["legendgroup"] for s in shapes} == {"breaks"}

    def test_close_breaks_take_separate_label_rows_and_the_axis_makes_room(self):
        points = trend(10, agent_model={5: "b", 6: "c"})
        figure = score_trend_figure(points)
        shifts = [a["yshift"] for a in figure["layout"]["annotations"]]
        assert shifts[0] == 0 and shifts[1] < 0
        low, high = figure["layout"]["yaxis"]["range"]
        assert low == 0 and high > 1.1  # headroom above a score of 1 for two rows
        assert figure["layout"]["yaxis"]["tickvals"][-1] == 1  # no tick above 1
        assert figure["layout"]["height"] > score_trend_figure(trend(10))["layout"]["height"]

    def test_a_label_near_the_right_edge_reads_leftwards_from_its_line(self):
        early, late = [
            a["xanchor"]
            for a in score_trend_figure(trend(20, mode={3: "revision"}, harness={20: "x"}))[
                "layout"
            ]["annotations"]
        ]
        assert (early, late) == ("left", "right")

    def test_user_text_in_a_break_is_escaped(self):
        points = trend(2, agent_model={2: HOSTILE})
        (label,) = score_trend_figure(points)["layout"]["annotations"]
        assert "<" not in label["hovertext"]
        assert "&lt;/script&gt;" in label["hovertext"]

    def test_the_table_marks_the_row_after_the_change(self):
        points = trend(4, agent_model={3: "claude-sonnet-4-6"})
        score = chart_tables(points)["score"]
        assert [r.change for r in score.rows] == [
            "",
            "",
            "#3: model changed (agent model claude-haiku-4-5 → claude-sonnet-4-6)",
            "",
        ]
        assert [b.number for b in score.breaks] == [3]

    def test_a_table_that_skips_the_iteration_marks_its_next_row(self):
        points = trend(4, mode={3: "revision"})
        points[2] = TrendPoint(**{**points[2].__dict__, "delta": None})
        delta = chart_tables(points)["delta"]
        assert [r.heading for r in delta.rows] == ["#1 label-1", "#2 label-2", "#4 label-4"]
        assert [bool(r.change) for r in delta.rows] == [False, False, True]


class TestScale:
    @pytest.mark.parametrize("n", [1, 2, 20, 100])
    def test_ticks_are_short_flat_and_at_most_max_ticks_with_the_newest_kept(self, n):
        points = trend(n)
        for build in CHARTS.values():
            xaxis = build(points)["layout"]["xaxis"]
            assert xaxis["tickangle"] == 0
            assert len(xaxis["tickvals"]) <= MAX_TICKS
            assert xaxis["tickvals"][-1] == n and xaxis["ticktext"][-1] == f"#{n}"
            assert xaxis["ticktext"] == [f"#{v}" for v in xaxis["tickvals"]]
            assert xaxis["range"][0] < 0 and n - 1 < xaxis["range"][1]

    def test_a_hundred_iterations_are_labelled_every_fifth(self):
        xaxis = score_trend_figure(trend(100))["layout"]["xaxis"]
        assert xaxis["tickvals"] == list(range(5, 101, 5))
        assert xaxis["categoryarray"] == list(range(1, 101))  # every iteration still drawn

    def test_twenty_iterations_are_all_labelled(self):
        assert score_trend_figure(trend(20))["layout"]["xaxis"]["tickvals"] == list(range(1, 21))

    @pytest.mark.parametrize("n", [1, 20, 100])
    def test_heights_leave_the_plot_area_its_room(self, n):
        for name, build in CHARTS.items():
            layout = build(trend(n))["layout"]
            margins = layout["margin"]["t"] + layout["margin"]["b"]
            assert layout["height"] - margins >= PLOT_HEIGHT, name
        cost = cost_trend_figure(trend(n))["layout"]
        assert cost["height"] > score_trend_figure(trend(n))["layout"]["height"]

    def test_the_height_grows_with_the_legend(self):
        few = score_trend_figure(trend(3))["layout"]["height"]
        many = [
            point(1, *(ConditionPoint(f"condition-number-{k}", "other", 0.5) for k in range(6)))
        ]
        assert score_trend_figure(many)["layout"]["height"] > few

    def test_many_iterations_get_smaller_markers(self):
        few = trace(score_trend_figure(trend(20)), "with_skill")["marker"]["size"]
        many = trace(score_trend_figure(trend(100)), "with_skill")["marker"]["size"]
        assert many < few

    def test_axis_titles_are_short_enough_to_sit_beside_their_plot(self):
        points = trend(5)
        titles = []
        for build in CHARTS.values():
            layout = build(points)["layout"]
            for name in ("yaxis", "yaxis2"):
                if name in layout:
                    titles.append(layout[name]["title"]["text"])
        assert titles == ["Score", "Δ score", "Invoked", "Tokens", "Seconds"]
        # At 12 px, ~7 px a character: well within the smallest panel (the cost chart's).
        assert max(len(t) for t in titles) * 7 < PLOT_HEIGHT * 0.44

    def test_the_hover_names_what_the_tick_leaves_out(self):
        from datetime import datetime

        (only,) = trend(1)
        dated = TrendPoint(**{**only.__dict__, "generated_at": datetime(2026, 5, 1, 10, 30)})
        row = trace(score_trend_figure([dated]), "with_skill")["customdata"][0]
        assert row[1] == "#1 label-1 (new-skill) · 2026-05-01 10:30"


def polylines(svg: str) -> list[list[tuple[float, float]]]:
    root = ET.fromstring(svg)
    return [
        [tuple(map(float, pair.split(","))) for pair in line.get("points").split()]
        for line in root.iter(f"{SVG}polyline")
    ]


class TestSparkline:
    @pytest.mark.parametrize("values", [[], [0.5], [None, 0.5, None], [math.nan, 0.2]])
    def test_fewer_than_two_values_draw_nothing(self, values):
        assert sparkline_svg(values) == ""

    def test_rates_span_the_height_from_zero_at_the_bottom_to_one_at_the_top(self):
        svg = sparkline_svg([0.0, 0.5, 1.0], width=100, height=20)
        root = ET.fromstring(svg)
        assert (root.get("width"), root.get("height"), root.get("viewBox")) == (
            "100",
            "20",
            "0 0 100 20",
        )
        ((first, middle, last),) = polylines(svg)
        assert first[1] > middle[1] > last[1]  # SVG y grows downwards
        assert middle[1] == pytest.approx(10)
        assert first[0] < middle[0] < last[0]
        assert first[0] >= 0 and last[0] <= 100 and last[1] >= 0 and first[1] <= 20

    def test_negative_values_use_minus_one_to_one_around_a_zero_line(self):
        svg = sparkline_svg([-1.0, 0.0, 1.0], height=24)
        ((low, zero, high),) = polylines(svg)
        assert zero[1] == pytest.approx(12)
        assert low[1] > zero[1] > high[1]
        (line,) = ET.fromstring(svg).iter(f"{SVG}line")
        assert float(line.get("y1")) == pytest.approx(12)

    def test_a_fixed_domain_keeps_rows_comparable(self):
        ((first, second),) = polylines(sparkline_svg([0.1, 0.2], domain=(-1, 1), height=24))
        assert first[1] < 12 and second[1] < first[1]

    def test_out_of_range_values_are_clamped_to_the_box(self):
        ((low, high),) = polylines(sparkline_svg([-5.0, 5.0], height=24))
        assert 0 <= high[1] < low[1] <= 24

    def test_gaps_split_the_line_and_a_lone_value_becomes_a_dot(self):
        svg = sparkline_svg([0.2, 0.4, None, 0.6, None, 0.1, 0.3])
        assert [len(line) for line in polylines(svg)] == [2, 2]
        (dot,) = ET.fromstring(svg).iter(f"{SVG}circle")
        assert float(dot.get("cx")) == pytest.approx(2 + 3 * (120 - 4) / 6)

    def test_it_is_markup_made_of_numbers_only(self):
        svg = sparkline_svg([-0.1, None, 0.9, 0.3, 0.5])
        assert "<title" not in svg
        words = set(re.findall(r"[A-Za-z][A-Za-z-]*", svg))
        assert words <= {
            "svg", "xmlns", "http", "www", "w", "org", "class", "sparkline", "width", "height",
            "viewBox", "aria-hidden", "true", "focusable", "false", "polyline", "points",
            "fill", "none", "stroke", "currentColor", "stroke-width", "stroke-linejoin",
            "round", "stroke-linecap", "circle", "cx", "cy", "r", "line", "x", "y",
            "stroke-opacity",
        }  # fmt: skip
        assert hasattr(svg, "__html__")  # marked safe, so templates render it as markup

    @pytest.mark.parametrize("size", [{"width": 0}, {"height": -1}, {"width": math.inf}])
    def test_it_refuses_a_box_without_area(self, size):
        with pytest.raises(ValueError):
            sparkline_svg([0.1, 0.2], **size)


class TestColours:
    def test_a_condition_has_one_colour_on_every_skill(self):
        alone = score_trend_figure([point(1, with_skill(0.5, None, None))])
        crowded = score_trend_figure(
            [
                point(1, ConditionPoint("aaa", "other", 0.1), without_skill(0.2, None, None)),
                point(2, ConditionPoint("zzz", "other", 0.3), with_skill(0.5, None, None)),
            ]
        )
        colour = condition_colour("with_skill")
        assert trace(alone, "with_skill")["line"]["color"] == colour
        assert trace(crowded, "with_skill")["line"]["color"] == colour
        assert trace(crowded, "aaa")["line"]["color"] == condition_colour("aaa")
        assert condition_colour("aaa") == condition_colour("aaa", "other")

    def test_roles_come_first_whatever_the_names(self):
        assert condition_colour("new_skill") == condition_colour("with_skill") == PALETTE[0]
        assert condition_colour("old_skill") == condition_colour("without_skill") == PALETTE[1]
        assert condition_colour("v2", "treatment") == PALETTE[0]
        assert condition_colour("anything-else") not in PALETTE[:2]

    def test_same_coloured_conditions_of_different_iterations_are_told_apart_by_dashes(self):
        styles = figure_colours([[("with_skill", None)], [("new_skill", "treatment")]])
        assert styles == {"with_skill": (PALETTE[0], "solid"), "new_skill": (PALETTE[0], "dash")}

    def test_two_treatments_run_side_by_side_never_share_a_colour(self):
        styles = figure_colours([[("with_skill", "treatment"), ("with_skill_v2", "treatment")]])
        assert styles["with_skill"][0] == PALETTE[0]
        assert styles["with_skill_v2"][0] != PALETTE[0]


class TestNotRecorded:
    def test_an_invocation_chart_of_a_tool_that_records_none_says_so_without_axes(self):
        points = [point(1, with_skill(0.5, None, None), tool="skill-creator")]
        figure = invocation_trend_figure(points)
        assert figure["data"] == []
        assert figure["layout"]["annotations"][-1]["text"] == (
            "Skill invocation not recorded by skill-creator"
        )
        assert figure["layout"]["xaxis"]["visible"] is False
        assert figure["layout"]["yaxis"]["visible"] is False
        assert chart_tables(points)["invocation"].note == (
            "Skill invocation not recorded by skill-creator"
        )


class TestChartTables:
    def test_every_chart_has_its_numbers_as_a_table_duration_included(self):
        points = [
            point(1, with_skill(0.8, 0.6, 0.95, mean_tokens=12000, mean_duration_ms=30000),
                  without_skill(0.5, None, None, mean_tokens=9000),
                  delta=DeltaPoint(0.3, 0.1, 0.5), signal="suggestive"),
        ]  # fmt: skip
        tables = chart_tables(points)
        assert set(tables) == {"score", "delta", "invocation", "cost"}
        score = tables["score"]
        assert score.headers == [
            "Iteration", "with_skill score (95% CI)", "without_skill score (95% CI)"
        ]  # fmt: skip
        (row,) = score.rows
        assert (row.heading, row.url) == ("#1 label-1", "/skills/demo/iterations/1/")
        assert row.values == ["0.80 (0.60 to 0.95)", "0.50 (no interval)"]
        assert tables["delta"].rows[0].values == ["+0.30", "+0.10 to +0.50", "suggestive"]
        cost = tables["cost"]
        assert "with_skill mean duration" in cost.headers
        assert cost.rows[0].values == ["12,000", "30.0 s", "9,000", "–"]

    def test_no_iterations_give_tables_that_say_so(self):
        assert all(t.note == "No data yet" and not t.rows for t in chart_tables([]).values())


def trigger_point(number: int, recall: Any, false_triggers: Any, **kw: Any) -> dict[str, Any]:
    """A row of TriggerPanel.figure_points; rates as (value, low, high) or None."""

    def rate(r: Any) -> dict[str, float] | None:
        return None if r is None else {"value": r[0], "low": r[1], "high": r[2]}

    return {
        "number": number,
        "label": kw.get("label", f"results-{number}.json"),
        "url": f"/skills/demo/triggers/{number}/",
        "split": kw.get("split", ""),
        "recall": rate(recall),
        "false_trigger_rate": rate(false_triggers),
    }


class TestTriggerTrend:
    POINTS = [
        trigger_point(2, (0.9, 0.7, 1.0), (0.1, 0.0, 0.3), split="test"),
        trigger_point(1, (0.5, 0.2, 0.8), None),
    ]

    def test_it_draws_recall_and_false_trigger_rate_per_description_in_order(self):
        figure = trigger_trend_figure(self.POINTS)
        recall = trace(figure, "recall (should trigger)")
        false_triggers = trace(figure, "false-trigger rate (should not)")
        assert recall["x"] == [1, 2] and recall["y"] == [0.5, 0.9]
        assert false_triggers["y"] == [None, 0.1]
        # Told apart by dash and marker, not by colour alone.
        assert recall["line"]["dash"] != false_triggers["line"]["dash"]
        assert recall["marker"]["symbol"] != false_triggers["marker"]["symbol"]
        band = trace(figure, "recall (should trigger) 95% CI")
        assert band["x"] == [1, 2, 2, 1] and band["y"] == [0.8, 1.0, 0.7, 0.2]
        assert figure["layout"]["yaxis"]["range"] == [0, 1.02]

    def test_hovering_names_the_description_the_rate_and_the_split(self):
        recall = trace(trigger_trend_figure(self.POINTS), "recall (should trigger)")
        first, second = recall["customdata"]
        assert first == [
            "/skills/demo/triggers/1/",
            "#1 results-1.json",
            "recall (should trigger): 50% (95% CI 20% to 80%)",
        ]
        assert second[2].endswith("on the test split")

    def test_its_table_holds_the_same_numbers(self):
        table = trigger_trend_table(self.POINTS)
        assert table.headers[1:] == [
            "Recall (95% CI)",
            "False-trigger rate (95% CI)",
            "Measured on",
        ]
        assert [(r.heading, r.url) for r in table.rows] == [
            ("#1 results-1.json", "/skills/demo/triggers/1/"),
            ("#2 results-2.json", "/skills/demo/triggers/2/"),
        ]
        assert table.rows[0].values == ["50% (20% to 80%)", "–", "all queries"]
        assert table.rows[1].values == ["90% (70% to 100%)", "10% (0% to 30%)", "test split"]

    def test_nothing_to_draw_says_so(self):
        assert trigger_trend_figure([])["layout"]["annotations"][-1]["text"] == "No data yet"
        assert trigger_trend_table([]).note == "No trigger results yet"

    def test_labels_are_data_never_markup_and_plotly_validates_it(self):
        import plotly.graph_objects as go
        import plotly.io as pio

        figure = trigger_trend_figure([trigger_point(1, (0.5, 0.2, 0.8), None, label=HOSTILE)])
        assert "<img" not in str(json_script(figure, "f"))
        assert {text for _, text in strings(figure) if "<" in text} <= {HOVER}
        assert figure["layout"]["xaxis"]["ticktext"] == ["#1"]
        (row,) = trace(figure, "recall (should trigger)")["customdata"]
        assert row[1] == "#1 &lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
        for points in ([], self.POINTS, [trigger_point(1, None, None, label=HOSTILE)]):
            figure = trigger_trend_figure(points)
            assert json.loads(pio.to_json(go.Figure(figure), validate=True)) == figure
