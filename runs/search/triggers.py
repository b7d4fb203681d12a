"""Search over trigger queries: the query texts of trigger evals that hold the words asked for.

Trigger queries are short and few (about twenty a set), so they are matched in the database
(case-insensitive containment of each term) rather than through the runs' full-text index;
each text is listed once per skill, at its latest trigger iteration.
"""

from __future__ import annotations

from dataclasses import dataclass

from runs.models import TriggerQuery

from .query import Query

#: At most this many trigger queries are listed under the runs a search finds.
MAX_TRIGGER_HITS = 20


@dataclass(frozen=True)
class TriggerHit:
    query: TriggerQuery
    #: How many trigger iterations of its skill tested this text.
    iterations: int


def trigger_queries(query: Query, *, skill_id: int | None = None) -> list[TriggerHit]:
    """The trigger queries holding every wanted term and no excluded one, newest first."""
    found = TriggerQuery.objects.select_related("iteration__skill")
    if skill_id is not None:
        found = found.filter(iteration__skill_id=skill_id)
    for term in query.wanted:
        found = found.filter(query__icontains=" ".join(term.words))
    for term in query.excluded:
        found = found.exclude(query__icontains=" ".join(term.words))
    hits: dict[tuple[int, str], TriggerQuery] = {}
    counts: dict[tuple[int, str], int] = {}
    for match in found.order_by("-iteration__number", "position")[: MAX_TRIGGER_HITS * 10]:
        key = (match.iteration.skill_id, match.query)
        hits.setdefault(key, match)
        counts[key] = counts.get(key, 0) + 1
    return [TriggerHit(hit, counts[key]) for key, hit in list(hits.items())[:MAX_TRIGGER_HITS]]
