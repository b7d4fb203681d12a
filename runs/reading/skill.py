"""The skill page: its trend charts, their tables and a summary per iteration."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from .. import charts
from ..models import Iteration, Skill
from .summaries import ConditionSummary, IterationSummary, summarise_iterations


def trend_points(skill: Skill) -> tuple[list[charts.TrendPoint], list[IterationSummary]]:
    """A point per iteration of the skill (oldest first) and the summaries behind them."""
    iterations = Iteration.objects.trend_of(skill)
    summaries = summarise_iterations(iterations)
    ordered = [summaries[it.pk] for it in iterations]
    eval_sets: dict[frozenset[str], frozenset[str]] = {}
    return [_point(s, eval_sets) for s in ordered], ordered


def _point(
    summary: IterationSummary, eval_sets: dict[frozenset[str], frozenset[str]]
) -> charts.TrendPoint:
    """The summary's point; iterations that ran the same evals share one set (`eval_sets`),
    so the charts tell them apart without comparing hundreds of ids."""
    iteration = summary.iteration
    evals = frozenset(summary.evals)
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
        agent_model=iteration.agent_model,
        harness=iteration.harness,
        evals=eval_sets.setdefault(evals, evals),
        generated_at=timezone.localtime(iteration.generated_at) if iteration.generated_at else None,
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
    #: Enough iterations that each chart takes the page's whole width.
    wide: bool = False


#: The iteration table's orders ('-' first: descending): the trend's order, the treatment's and
#: the control's score, the delta and the number of validity warnings.
ITERATION_SORTS = ("iteration", "treatment", "control", "delta", "warnings")
#: Newest first, as the table always listed them.
DEFAULT_ITERATION_SORT = "-iteration"


def sort_summaries(summaries: list[IterationSummary], sort: str) -> list[IterationSummary]:
    """The iteration table's rows (newest first, as `SkillTrends.summaries`) in `sort` order.

    Iterations without the value (no control, no delta) come last either way; equal values
    keep the newest first. An unknown `sort` leaves them as they are.
    """
    position = {id(s): -i for i, s in enumerate(summaries)}  # oldest first: the trend's order
    values: dict[str, Callable[[IterationSummary], object]] = {
        "iteration": lambda s: position[id(s)],
        "treatment": lambda s: _mean_score(s.treatment),
        "control": lambda s: _mean_score(s.control),
        "delta": lambda s: s.delta.mean if s.delta else None,
        "warnings": lambda s: len(s.iteration.validity_warnings),
    }
    value = values.get(sort.removeprefix("-"))
    if value is None:
        return summaries
    present = [s for s in summaries if value(s) is not None]
    missing = [s for s in summaries if value(s) is None]
    present.sort(key=value, reverse=sort.startswith("-"))  # stable: ties stay newest first
    return present + missing


def _mean_score(condition: ConditionSummary | None) -> float | None:
    return condition.score.mean if condition and condition.score else None


def skill_trends(skill: Skill) -> SkillTrends:
    """The skill page's charts and iteration table, from one `trend_points`."""
    points, summaries = trend_points(skill)
    figures = {name: build(points) for name, build in charts.CHARTS.items()} if points else {}
    tables = charts.chart_tables(points) if points else {}
    wide = len(points) > charts.WIDE_FROM
    return SkillTrends(figures=figures, tables=tables, summaries=summaries[::-1], wide=wide)
