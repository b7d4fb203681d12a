"""Running a search: the database finds the runs, newest first; Python writes the snippets.

Newest first (the latest iterations' runs are what a reviewer is looking into), so the
database can stop at the page it was asked for: ranking every match by relevance reads the
positions of every occurrence of a common word in every run, seconds over 18,000 runs. For
the same reason the count stops at MAX_COUNTED ("1,000+ runs"). Snippets are cut here, from
the stored text, so a hit in a conversation can name and link its event (`#event-<n>`),
which neither database's snippet function knows.

Runs of one eval whose snippets read alike (its prompt, matched in each of its ten runs) are
one result on a page (`HitGroup`): the runs of an eval are imported one after the other, so
such runs are neighbours newest first, and a group is a run of neighbours. Paging stays by
run; the run just before and just after the page are read too, so a group cut by the page's
edge says that it goes on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from runs.models import LARGE_ITERATION_FIELDS, Iteration, Run

from .index import event_text, transcripts
from .models import Outcome, SearchDocument
from .pending import still_indexing
from .query import Query

PAGE_SIZE = 20
SNIPPET_BEFORE, SNIPPET_AFTER = 70, 170
#: Where a hit is looked for, in the order a tie is settled, with what a reader calls it.
FIELDS = (
    ("final_message", "final message"),
    ("prompt", "prompt"),
    ("evidence", "evidence"),
    ("notes", "reviewer note"),
    ("conversation", "conversation"),
)
#: Matches are counted up to this many; more show as "1,000+".
MAX_COUNTED = 1_000
#: PostgreSQL: from this many expected matches on, a search walks the filtered documents
#: newest first instead of asking the GIN index (see _postgres).
DENSE_MATCHES = 500
ITERATIONS = Iteration._meta.db_table


@dataclass(frozen=True)
class Filters:
    skill_id: int | None = None
    iteration_number: int | None = None
    condition: str = ""
    outcome: str = ""


@dataclass(frozen=True)
class Hit:
    run: Run
    found_in: str  # "final message", "conversation", …
    snippet: SafeString
    url: str
    event: int | None = None
    #: The run's outcome as indexed: Outcome.PASS, Outcome.FAIL or "" (not graded).
    outcome: str = ""

    @property
    def group_key(self) -> tuple[int, str, str, str]:
        """What hits share to be one result: iteration, eval, where it matched, the snippet."""
        return (self.run.iteration_id, self.run.eval_id, self.found_in, str(self.snippet))


@dataclass
class HitGroup:
    """Neighbouring hits of one eval whose snippets, found in the same field, read the same."""

    hits: list[Hit]
    #: Runs of this group are on the page before (`continued`) or the page after (`continues`).
    continued: bool = False
    continues: bool = False

    @property
    def first(self) -> Hit:
        return self.hits[0]

    @property
    def passed(self) -> int:
        return sum(hit.outcome == Outcome.PASS for hit in self.hits)

    @property
    def failed(self) -> int:
        return sum(hit.outcome == Outcome.FAIL for hit in self.hits)

    @property
    def ungraded(self) -> int:
        return len(self.hits) - self.passed - self.failed

    @property
    def conditions(self) -> list[tuple[str, int]]:
        """(condition, runs) in the order they come."""
        counts: dict[str, int] = {}
        for hit in self.hits:
            counts[hit.run.condition.name] = counts.get(hit.run.condition.name, 0) + 1
        return list(counts.items())

    def eval_url(self) -> str:
        """The eval's page in the hits' iteration."""
        run = self.first.run
        return reverse(
            "runs:eval", args=[run.iteration.skill.name, run.iteration.number, run.eval_id]
        )


def group_hits(
    hits: list[Hit], *, before: Hit | None = None, after: Hit | None = None
) -> list[HitGroup]:
    """The hits as results, neighbours that read alike as one; `before`/`after` are the runs
    just outside the page, to mark a group its edge cuts."""
    groups: list[HitGroup] = []
    for hit in hits:
        if groups and groups[-1].first.group_key == hit.group_key:
            groups[-1].hits.append(hit)
        else:
            groups.append(HitGroup([hit]))
    if groups and before is not None:
        groups[0].continued = groups[0].first.group_key == before.group_key
    if groups and after is not None:
        groups[-1].continues = groups[-1].first.group_key == after.group_key
    return groups


@dataclass
class Results:
    query: Query
    #: How many runs match, counted up to MAX_COUNTED (`capped`: there are more).
    count: int
    hits: list[Hit] = field(default_factory=list)
    #: Iterations in the search's scope whose runs are not all indexed yet ("skill #n").
    indexing: list[str] = field(default_factory=list)
    #: The page's hits as results (group_hits).
    groups: list[HitGroup] = field(default_factory=list)

    @property
    def capped(self) -> bool:
        return self.count > MAX_COUNTED


def search(query: Query, filters: Filters, *, offset: int = 0, limit: int = PAGE_SIZE) -> Results:
    """The runs that match, newest first: how many (up to MAX_COUNTED + 1), and the hits
    from `offset` on, with the runs just outside the page to tell where a group goes on."""
    start = max(0, offset - 1)
    fetch = _sqlite if connection.vendor == "sqlite" else _postgres
    count, ids = fetch(query, filters, offset=start, limit=limit + (offset - start) + 1)
    found = {hit.run.pk: hit for hit in _hits(query, ids)}
    before = found.get(ids[0]) if offset > start and ids else None
    page_ids = ids[offset - start : offset - start + limit]
    after_ids = ids[offset - start + limit :]
    after = found.get(after_ids[0]) if after_ids else None
    hits = [found[run_id] for run_id in page_ids if run_id in found]
    indexing = still_indexing(skill_id=filters.skill_id, number=filters.iteration_number)
    groups = group_hits(hits, before=before, after=after)
    return Results(query=query, count=count, hits=hits, indexing=indexing, groups=groups)


def _where(filters: Filters, *, table: str) -> tuple[list[str], list[object]]:
    """The filters as SQL conditions on the documents' table (named `table`)."""
    where: list[str] = []
    params: list[object] = []
    if filters.skill_id is not None:
        where.append(f"{table}.skill_id = %s")
        params.append(filters.skill_id)
    if filters.iteration_number is not None:
        where.append(f"{table}.iteration_id IN (SELECT id FROM {ITERATIONS} WHERE number = %s)")
        params.append(filters.iteration_number)
    if filters.condition:
        where.append(f"{table}.condition = %s")
        params.append(filters.condition)
    if filters.outcome:
        where.append(f"{table}.outcome = %s")
        params.append(filters.outcome)
    return where, params


def _run(
    count_sql: str, page_sql: str, params: list[object], *, offset: int, limit: int
) -> tuple[int, list[int]]:
    """How many documents match (up to MAX_COUNTED + 1), and the ids of the page."""
    with connection.cursor() as cursor:
        cursor.execute(count_sql, [*params, MAX_COUNTED + 1])
        count = cursor.fetchone()[0]
        cursor.execute(page_sql, [*params, limit, offset])
        ids = [row[0] for row in cursor.fetchall()]
    return count, ids


def _sqlite(query: Query, filters: Filters, *, offset: int, limit: int) -> tuple[int, list[int]]:
    where, params = _where(filters, table="d")
    # CROSS JOIN: SQLite's planner would otherwise start from the filter's index and ask FTS5
    # once per run (300 ms for a prefix over 540 runs, against 2 ms). ORDER BY the FTS5 rowid
    # (the run's id): FTS5 walks its index in that order and stops at the LIMIT.
    source = (
        "FROM search_fts CROSS JOIN search_searchdocument d ON d.run_id = search_fts.rowid "
        f"WHERE {' AND '.join(['search_fts MATCH %s', *where])}"
    )
    return _run(
        f"SELECT count(*) FROM (SELECT 1 {source} LIMIT %s)",
        f"SELECT d.run_id {source} ORDER BY search_fts.rowid DESC LIMIT %s OFFSET %s",
        [query.fts5(), *params],
        offset=offset,
        limit=limit,
    )


def _postgres(query: Query, filters: Filters, *, offset: int, limit: int) -> tuple[int, list[int]]:
    where, params = _where(filters, table="f")
    match = "f.vector @@ to_tsquery('simple', %s)"
    params.append(query.tsquery())
    if _planned_matches(where, match, params) < DENSE_MATCHES:
        # Few matches expected: the GIN index finds them, whatever else the filters say.
        source = f"FROM search_searchdocument f WHERE {' AND '.join([*where, match])}"
    else:
        # Many: the planner then walks the primary key newest first, testing each row's
        # vector (~8 KB, out of line) before the filters, and so reads other skills' runs on
        # the way (a phrase of common words in one skill, 280 ms over 18,000 runs). The
        # filtered documents come first, newest first, behind OFFSET 0 (a fence the planner
        # does not see through), and only their vectors are read.
        filtered = " WHERE " + " AND ".join(where) if where else ""
        source = (
            "FROM (SELECT f.run_id, f.vector FROM search_searchdocument f"
            f"{filtered} ORDER BY f.run_id DESC OFFSET 0) f WHERE {match}"
        )
    return _run(
        f"SELECT count(*) FROM (SELECT 1 {source} LIMIT %s) counted",
        f"SELECT f.run_id {source} ORDER BY f.run_id DESC LIMIT %s OFFSET %s",
        params,
        offset=offset,
        limit=limit,
    )


def _planned_matches(where: list[str], match: str, params: list[object]) -> float:
    """How many documents PostgreSQL's statistics expect to match: its own plan's estimate."""
    sql = f"SELECT 1 FROM search_searchdocument f WHERE {' AND '.join([*where, match])}"
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return float(plan[0]["Plan"]["Plan Rows"])


def _hits(query: Query, ids: list[int]) -> list[Hit]:
    if not ids:
        return []
    pattern = query.highlight_pattern()
    wanted = len({word for term in query.wanted for word in term.words})
    # Not the conversation (tens of KB a run): a hit there is located in the run's events.
    documents = SearchDocument.objects.defer("vector", "conversation").in_bulk(ids)
    runs = (
        Run.objects.select_related("iteration__skill", "condition", "eval_case")
        .defer("conversation", "tool_invocations", "artifacts", "prompt", "final_message")
        # An iteration's recorded benchmark alone is tens of KB of JSON, decoded per hit.
        .defer(*(f"iteration__{name}" for name in LARGE_ITERATION_FIELDS))
        .defer("eval_case__definition", "eval_case__assertions")
        .in_bulk(ids)
    )
    shown = [run_id for run_id in ids if run_id in documents and run_id in runs]
    best = {run_id: _best_field(documents[run_id], pattern) for run_id in shown}
    # Where not every word is in one of the short fields, the conversation may hold them
    # all: the transcripts of those runs, in one query.
    events = transcripts(run_id for run_id in shown if best[run_id][0] < wanted)
    return [
        _hit(runs[run_id], documents[run_id], pattern, best[run_id], events.get(run_id))
        for run_id in shown
    ]


def _best_field(document: SearchDocument, pattern: re.Pattern[str]) -> tuple[int, str]:
    """(wanted words found, field) of the short field with the most; ties to FIELDS' order."""
    scored = [
        (len({m.group(0).lower() for m in pattern.finditer(getattr(document, name))}), -i, name)
        for i, (name, _) in enumerate(FIELDS[:-1])
    ]
    found, _, name = max(scored)
    return found, name


def _hit(
    run: Run,
    document: SearchDocument,
    pattern: re.Pattern[str],
    best: tuple[int, str],
    events: list[Any] | None,
) -> Hit:
    url = run.get_absolute_url()
    found, name = best
    if events is not None:
        words, ordinal, text = _event(events, pattern)
        if ordinal is not None and words > found:
            return Hit(
                run,
                f"event {ordinal}",
                snippet(text, pattern),
                f"{url}#event-{ordinal}",
                ordinal,
                document.outcome,
            )
    if not found:
        # What FTS5 or tsquery matched and this regex does not read alike (rare): say where
        # the run is, with the opening of its final message.
        name = "final_message"
    if name == "final_message":
        url = f"{url}#final-{run.pk}"
    text = snippet(getattr(document, name), pattern)
    return Hit(run, dict(FIELDS)[name], text, url, outcome=document.outcome)


def _event(events: list[Any], pattern: re.Pattern[str]) -> tuple[int, int | None, str]:
    """(words found, ordinal, text) of the first event with the most wanted words;
    (0, None, "") when none has any."""
    best: tuple[int, int | None, str] = (0, None, "")
    for event in events:
        text = event_text(event)
        found = len({m.group(0).lower() for m in pattern.finditer(text)})
        if found > best[0]:
            best = (found, int(event.get("ordinal") or 0), text)
    return best


def snippet(text: str, pattern: re.Pattern[str]) -> SafeString:
    """A window of the text around its first match, escaped, each match in <mark>."""
    first = pattern.search(text)
    start = max(0, (first.start() if first else 0) - SNIPPET_BEFORE)
    end = min(len(text), (first.end() if first else 0) + SNIPPET_AFTER)
    if start > 0:
        space = text.find(" ", start, start + 20)
        start = space + 1 if space != -1 else start
    window = text[start:end]
    parts, position = [], 0
    for match in pattern.finditer(window):
        parts.append(escape(window[position : match.start()]))
        parts.append(f"<mark>{escape(match.group(0))}</mark>")
        position = match.end()
    parts.append(escape(window[position:]))
    body = " ".join("".join(parts).split())  # one line: newlines and indents read as spaces
    return mark_safe(("… " if start > 0 else "") + body + (" …" if end < len(text) else ""))  # noqa: S308
