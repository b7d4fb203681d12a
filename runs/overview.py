"""Rows of the overview and points of a skill's trend charts, in a fixed number of queries."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Max, Q
from django.template.defaultfilters import date as date_filter
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import template_localtime

from . import charts
from .analysis import ConditionSummary, IterationSummary, summarise_iterations
from .models import Iteration, Skill
from .sparklines import sparkline_svg
from .templatetags.evalsite import delta, interval, percent, score, tokens

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


#: The overview is a pure function of skills and iterations, which change only when saved
#: (import, review): their counts and latest updated_at key the cache.
OVERVIEW_CACHE_SECONDS = 24 * 3600


def skill_rows(*, query: str = "") -> list[SkillRow]:
    """Every skill (matching `query` in its name or description) with its latest results."""
    stamp = Skill.objects.aggregate(
        n_skills=Count("id", distinct=True),
        skills_at=Max("updated_at"),
        n_iterations=Count("iterations", distinct=True),
        iterations_at=Max("iterations__updated_at"),
    )
    text = repr(sorted(stamp.items())) + query
    key = f"evalsite:overview:v1:{hashlib.sha256(text.encode()).hexdigest()}"
    rows = cache.get(key)
    if rows is None:
        rows = _skill_rows(query)
        cache.set(key, rows, OVERVIEW_CACHE_SECONDS)
    return rows


def _skill_rows(query: str) -> list[SkillRow]:
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
    url = _iteration_urls(skill.name)
    return [_point(s, url(s.iteration.number)) for s in ordered], ordered


def _iteration_urls(skill: str) -> Callable[[int], str]:
    """number → the iteration page's URL, from one reverse() for all of a skill's iterations.

    reverse() is most of the cost of a trend point; the number is the URL's last segment,
    so it is swapped into one reversed URL (or, should the URL change shape, each reversed).
    """
    sample = reverse("runs:iteration", args=[skill, 0])
    if not sample.endswith("/0/"):
        return lambda number: reverse("runs:iteration", args=[skill, number])
    prefix = sample[:-2]
    return lambda number: f"{prefix}{number}/"


def _point(summary: IterationSummary, url: str) -> charts.TrendPoint:
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
        significant=bool(summary.delta and summary.delta.significant),
        url=url,
    )


#: The skill page's data changes only when one of its iterations is saved (import, review).
SKILL_CACHE_SECONDS = 24 * 3600
CHARTS = {
    "score": charts.score_trend_figure,
    "delta": charts.delta_trend_figure,
    "invocation": charts.invocation_trend_figure,
    "cost": charts.cost_trend_figure,
}


def skill_trends(skill: Skill) -> tuple[list[dict[str, Any]], dict[str, SafeString]]:
    """The skill page's iteration table (newest first) and its charts as <script>-safe JSON.

    Cached under the skill's iterations' count and latest save (one indexed query), so a
    repeated view renders strings: the table's numbers, dates and links are formatted here
    once, exactly as its template filters would, instead of through template lookups on
    every view.
    """
    stamp = Iteration.objects.filter(skill=skill).aggregate(n=Count("id"), at=Max("updated_at"))
    at = stamp["at"].timestamp() if stamp["at"] else 0
    # The name is hashed: memcached refuses keys with spaces or over 250 bytes.
    name = hashlib.sha256(skill.name.encode()).hexdigest()[:16]
    key = f"evalsite:skill:v1:{skill.pk}:{name}:{stamp['n']}:{at}"
    cached = cache.get(key)
    if cached is None:
        points, summaries = trend_points(skill)
        figures = {}
        if points:
            figures = {name: charts.figure_json(build(points)) for name, build in CHARTS.items()}
        url = _iteration_urls(skill.name)
        rows = [_table_row(s, url(s.iteration.number)) for s in reversed(summaries)]
        cached = (rows, figures)
        cache.set(key, cached, SKILL_CACHE_SECONDS)
    rows, figures = cached
    # The JSON escapes < > & (charts.figure_json): safe inside <script>.
    return rows, {name: mark_safe(text) for name, text in figures.items()}


def _table_row(summary: IterationSummary, url: str) -> dict[str, Any]:
    """One iteration's cells of the skill page's table, as display strings."""
    it, t, c, d = summary.iteration, summary.treatment, summary.control, summary.delta
    generated = template_localtime(it.generated_at) if it.generated_at else None
    invocation = t.invocation if t else None
    return {
        "number": it.number,
        "url": url,
        "label": it.label,
        "run_label": it.run_label,
        "generated_iso": date_filter(generated, "c") if generated else "",
        "generated": date_filter(generated, "Y-m-d H:i") if generated else "",
        "mode": it.get_mode_display(),
        "baseline": it.baseline,
        "agent_model": it.agent_model or "–",
        "judge_model": it.judge_model or "",
        "treatment": _condition_cells(t),
        "control": _condition_cells(c),
        "delta": d,
        "delta_text": delta(d.mean) if d else "",
        "delta_interval": interval(d.interval, True) if d else "",
        "invocation": percent(invocation.rate) if invocation else "",
        "invocation_count": f"{invocation.successes}/{invocation.n}" if invocation else "",
        "tokens": f"{_tokens(t)} / {_tokens(c)}",
        "warnings": len(it.validity_warnings),
    }


def _condition_cells(condition: ConditionSummary | None) -> dict[str, str] | None:
    if condition is None:
        return None
    return {
        "name": condition.name,
        "score": score(condition.score.mean) if condition.score else score(None),
        "interval": interval(condition.score.interval) if condition.score else "",
    }


def _tokens(condition: ConditionSummary | None) -> str:
    return tokens(condition.mean_tokens) if condition else "–"
