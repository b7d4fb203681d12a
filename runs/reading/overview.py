"""The overview: every skill with its latest results and a sparkline of recent deltas."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from ..charts.sparklines import sparkline_svg
from ..models import Iteration, Skill
from .summaries import IterationSummary, summarise_iterations

#: How many recent iterations the overview's sparkline shows.
SPARKLINE_ITERATIONS = 10


@dataclass
class SkillRow:
    """One skill of the overview (and of the API's skill list)."""

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
    iterations_of_skills = (
        Iteration.objects.filter(skill__in=skills).light().order_by("-position", "-number")
    )
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
