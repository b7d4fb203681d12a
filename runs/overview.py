"""Rows of the overview and points of a skill's trend charts, in a fixed number of queries."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q

from . import charts
from .analysis import IterationSummary, summarise_iterations
from .models import Iteration, Skill
from .sparklines import sparkline_svg

#: How many recent iterations the overview's sparkline shows.
SPARKLINE_ITERATIONS = 10


@dataclass
class SkillRow:
    skill: Skill
    iterations: int
    latest: Iteration | None
    summary: IterationSummary | None
    sparkline: str

    @property
    def warnings(self) -> int:
        return len(self.latest.validity_warnings) if self.latest else 0

    @property
    def updated(self) -> datetime | None:
        if self.latest is None:
            return None
        return self.latest.generated_at or self.latest.imported_at

    @property
    def delta(self) -> float | None:
        return self.summary.delta.mean if self.summary and self.summary.delta else None


def skill_rows(*, query: str = "") -> list[SkillRow]:
    """Every skill (matching `query` in its name or description) with its latest results."""
    skills = Skill.objects.order_by("name")
    if query:
        skills = skills.filter(Q(name__icontains=query) | Q(description__icontains=query))
    skills = list(skills)
    recent: dict[int, list[Iteration]] = defaultdict(list)
    counts: dict[int, int] = defaultdict(int)
    iterations_of_skills = Iteration.objects.filter(skill__in=skills).light().order_by("-number")
    for iteration in iterations_of_skills:
        counts[iteration.skill_id] += 1
        if len(recent[iteration.skill_id]) < SPARKLINE_ITERATIONS:
            recent[iteration.skill_id].append(iteration)
    summaries = summarise_iterations([it for its in recent.values() for it in its])
    rows = []
    for skill in skills:
        iterations = recent.get(skill.pk, [])
        deltas = [
            s.delta.mean if (s := summaries[it.pk]).delta else None for it in reversed(iterations)
        ]
        rows.append(
            SkillRow(
                skill=skill,
                iterations=counts[skill.pk],
                latest=iterations[0] if iterations else None,
                summary=summaries[iterations[0].pk] if iterations else None,
                sparkline=sparkline_svg(deltas, domain=(-1, 1)),
            )
        )
    return rows


def sort_rows(rows: list[SkillRow], sort: str) -> list[SkillRow]:
    """Rows ordered by name, delta, last update or warnings; '-' first means descending.

    Rows without a value (a skill with no iterations yet) come last either way.
    """
    key = sort.lstrip("-")

    def value(row: SkillRow) -> object:
        return {
            "name": row.skill.name,
            "delta": row.delta,
            "updated": row.updated,
            "warnings": row.warnings,
        }[key]

    present = [r for r in rows if value(r) is not None]
    missing = [r for r in rows if value(r) is None]
    present.sort(key=value, reverse=sort.startswith("-"))
    return present + missing


def trend_points(skill: Skill) -> tuple[list[charts.TrendPoint], list[IterationSummary]]:
    """A point per iteration of the skill (oldest first) and the summaries behind them."""
    iterations = Iteration.objects.trend_of(skill)
    summaries = summarise_iterations(iterations)
    ordered = [summaries[it.pk] for it in iterations]
    return [_point(s) for s in ordered], ordered


def _point(summary: IterationSummary) -> charts.TrendPoint:
    iteration = summary.iteration
    conditions = tuple(
        charts.ConditionPoint.from_stats(
            c.name,
            score=c.score,
            invocation=c.invocation,
            mean_tokens=c.mean_tokens,
            mean_duration_ms=c.mean_duration_ms,
            role=c.role,
        )
        for c in summary.conditions
    )
    return charts.TrendPoint(
        number=iteration.number,
        label=iteration.label,
        mode=iteration.mode,
        conditions=conditions,
        delta=charts.DeltaPoint.from_paired(summary.delta),
        signal=summary.delta.signal if summary.delta else "noise",
        url=iteration.get_absolute_url(),
        tool=TOOLS.get(iteration.source_kind, ""),
    )


#: The program that wrote an iteration's results, by the iteration's source kind.
TOOLS = {
    "eval-magic": "eval-magic",
    "eval-magic-baseline": "eval-magic",
    "skill-creator": "skill-creator",
}


@dataclass
class SkillTrends:
    """The skill page's data: its charts, their tables and a summary per iteration."""

    #: Chart name → the plotly figure (a dict, for `json_script`).
    figures: dict[str, dict[str, Any]]
    #: Chart name → the same numbers as a table, for pages read without JavaScript.
    tables: dict[str, charts.ChartTable]
    #: Newest first, as the iteration table lists them.
    summaries: list[IterationSummary]


def skill_trends(skill: Skill) -> SkillTrends:
    """The skill page's charts and iteration table, from one `trend_points`."""
    points, summaries = trend_points(skill)
    figures = {name: build(points) for name, build in charts.CHARTS.items()} if points else {}
    tables = charts.chart_tables(points) if points else {}
    return SkillTrends(figures=figures, tables=tables, summaries=summaries[::-1])
