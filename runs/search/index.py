"""Keeping the search index exact: each write that changes what a run shows re-indexes it.

The import workflow indexes every iteration it writes, in the import's transaction (a
rejected import leaves the index as it was): a new iteration from the runs it has in memory
(`index_written`), a changed one read back (`index_iteration`); reviews and `regrade` call
`index_runs`. Deleting a run, iteration or skill deletes its document (a cascade; on SQLite
the FTS5 triggers follow). `rebuild` (manage.py searchindex) writes every document afresh.
"""

from __future__ import annotations

import re
import string
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson
from django.db import connection, transaction
from django.db.models import Case, QuerySet, TextField, When
from django.db.models.functions import Cast

from runs.models import AssertionResult, Iteration, Review, Run, RunStatus

from .models import Outcome, PendingIndex, SearchDocument

#: What of a tool call is indexed: its name and the first 200 characters of its arguments
#: and of its result (the command or path, the start of the output). Tool output is most of
#: a transcript's bytes and little of what people search for, and indexing it costs every
#: import: over the import bench's 18,000 runs, 500 characters added 40 % to an import's
#: CPU and 200 add 20 % (bench/README.md). Messages are indexed whole; a conversation's
#: text stops at MAX_CONVERSATION_CHARS.
TOOL_TEXT_CHARS = 200
MAX_CONVERSATION_CHARS = 300_000
_BATCH = 500
_SORTED = orjson.OPT_SORT_KEYS


def event_text(event: Any) -> str:
    """The searchable text of one conversation event (also how a hit finds its event)."""
    if not isinstance(event, dict):
        return ""
    if event.get("type", "tool_invocation") != "tool_invocation":
        return str(event.get("text") or "")
    parts = [str(event.get("name") or "")]
    for key in ("args", "result"):
        value = event.get(key)
        if value is None:
            continue
        # Keys sorted: PostgreSQL's jsonb gives them back in its own order, and the first
        # TOOL_TEXT_CHARS must be the same whether a run is indexed as imported or read back.
        text = value if isinstance(value, str) else _json_text(value)
        parts.append(text[:TOOL_TEXT_CHARS])
    return "\n".join(parts)


def _json_text(value: Any) -> str:
    """Arguments as JSON, read as text: an escaped newline or tab is a space, so that a
    Write of "line one\\nline two" indexes the word "line", not "nline"."""
    text = orjson.dumps(value, option=_SORTED).decode()
    return _ESCAPE.sub(_unescaped, text) if "\\" in text else text


#: A JSON string escape: a backslash and what it escapes (\uXXXX's letters stay letters).
_ESCAPE = re.compile(r"\\(.)")


def _unescaped(escape: re.Match[str]) -> str:
    return " " if escape.group(1) in "nrt" else escape.group(1)


def conversation_text(events: list[Any] | None) -> str:
    """The searchable text of a transcript: its events' texts, up to MAX_CONVERSATION_CHARS."""
    return "\n\n".join(event_text(e) for e in (events or []))[:MAX_CONVERSATION_CHARS]


@dataclass
class Written:
    """What the import knows of a run's grading as it writes it (see `index_written`)."""

    pass_rate: float | None
    #: The assertion results' evidence, in their order, meta results and empty ones left out.
    evidence: list[str] = field(default_factory=list)


def _outcome(status: str, pass_rate: float | None) -> str:
    if status == RunStatus.ERRORED or pass_rate is None:
        return Outcome.UNGRADED
    return Outcome.PASS if pass_rate >= 1 else Outcome.FAIL


#: A document's columns, in the order `_row` builds them and `_write` inserts them.
COLUMNS = (
    "run_id",
    "skill_id",
    "iteration_id",
    "condition",
    "outcome",
    "prompt",
    "final_message",
    "evidence",
    "notes",
    "conversation",
)
#: PostgreSQL: the text columns the vector is built from, with what people look for first
#: ranking first (weights A–C), as COLUMNS' positions.
WEIGHTS = (
    ("final_message", "A"),
    ("prompt", "A"),
    ("evidence", "B"),
    ("notes", "B"),
    ("conversation", "C"),
)
_WEIGHTED = tuple(COLUMNS.index(name) for name, _ in WEIGHTS)


def _row(
    run_id: int,
    skill_id: int,
    iteration_id: int,
    condition: str,
    status: str,
    pass_rate: float | None,
    prompt: str,
    final_message: str,
    evidence: list[str],
    notes: list[str],
    transcript: list[Any],
) -> tuple[Any, ...]:
    """One run's document, as COLUMNS: how both the database and the writer's runs index."""
    return (
        run_id,
        skill_id,
        iteration_id,
        condition,
        _outcome(status, pass_rate),
        prompt,
        final_message,
        "\n".join(evidence),
        "\n".join(notes),
        conversation_text(transcript),
    )


#: A run's one transcript as stored JSON text, for orjson to decode (Django's JSONField
#: decoding was a third of indexing time): run.json's tool_invocations repeat the
#: conversation's tool calls, so they are read only for a run without conversation.json.
TRANSCRIPT = Case(
    When(conversation_events=0, then=Cast("tool_invocations", TextField())),
    default=Cast("conversation", TextField()),
)


def transcripts(run_ids: Iterable[int]) -> dict[int, list[Any]]:
    """Run id → its transcript's events (conversation, else run.json's tool calls), in one
    query."""
    rows = Run.objects.filter(pk__in=list(run_ids)).values_list("pk", TRANSCRIPT)
    return {pk: orjson.loads(text) or [] for pk, text in rows}


def _notes(run_ids: Any) -> dict[int, list[str]]:
    notes: dict[int, list[str]] = defaultdict(list)
    for run_id, text in (
        Review.objects.filter(run__in=run_ids).order_by("created_at").values_list("run_id", "text")
    ):
        notes[run_id].append(text)
    return notes


def _rows(runs: QuerySet[Run]) -> Iterator[tuple[Any, ...]]:
    """The documents of these runs, read from the database."""
    rows = runs.values_list(
        "id",
        "iteration__skill_id",
        "iteration_id",
        "condition__name",
        "status",
        "grading__pass_rate",
        "prompt",
        "eval_case__prompt",
        "final_message",
        TRANSCRIPT,
    )
    evidence: dict[int, list[str]] = defaultdict(list)
    for run_id, text in (
        AssertionResult.objects.filter(grading__run__in=runs.values("id"), is_meta=False)
        .exclude(evidence="")
        .order_by("position")
        .values_list("grading__run_id", "evidence")
    ):
        evidence[run_id].append(text)
    notes = _notes(runs.values("id"))
    for run_id, *filters, prompt, case_prompt, final_message, transcript in rows.iterator(
        chunk_size=_BATCH
    ):
        # filters: skill, iteration, condition, status and pass rate, as _row takes them.
        yield _row(
            run_id,
            *filters,
            prompt or case_prompt or "",
            final_message,
            evidence[run_id],
            notes[run_id],
            orjson.loads(transcript),
        )


#: ASCII punctuation, which PostgreSQL's parser keeps inside words ("src/report.py" and
#: "page_size" are one word to it, several to FTS5 and to a person), read as spaces so that
#: both databases agree; other characters that are not letters or digits separate words
#: for PostgreSQL's parser already.
_PUNCTUATION = str.maketrans(dict.fromkeys(string.punctuation, " "))
_PUNCTUATION_CHARS = re.compile(f"[{re.escape(string.punctuation)}]")


def without_punctuation(text: str) -> str:
    # translate is ~100x faster than a regex on ASCII text, and far slower on the rest.
    return text.translate(_PUNCTUATION) if text.isascii() else _PUNCTUATION_CHARS.sub(" ", text)


def _insert_sql() -> str:
    table = connection.ops.quote_name(SearchDocument._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c) for c in COLUMNS)
    marks = ", ".join(["%s"] * len(COLUMNS))
    if connection.vendor != "postgresql":
        return f"INSERT INTO {table} ({names}) VALUES ({marks})"  # FTS5's trigger indexes it
    # The vector is computed as the row is written: one pass, no UPDATE of every row after.
    vector = " || ".join(
        f"setweight(to_tsvector('simple', %s), '{weight}')" for _, weight in WEIGHTS
    )
    return f"INSERT INTO {table} ({names}, vector) VALUES ({marks}, {vector})"


def _write(rows: Iterable[tuple[Any, ...]], documents: QuerySet[SearchDocument]) -> int:
    """Replace the documents selected by `documents` with `rows` (COLUMNS tuples)."""
    sql = _insert_sql()
    postgres = connection.vendor == "postgresql"
    built = 0
    with transaction.atomic(), connection.cursor() as cursor:
        documents.delete()
        for batch in _batches(rows):
            if postgres:
                batch = [(*row, *(without_punctuation(row[i]) for i in _WEIGHTED)) for row in batch]
            cursor.executemany(sql, batch)
            built += len(batch)
    return built


def _batches(rows: Iterable[tuple[Any, ...]]) -> Iterator[list[tuple[Any, ...]]]:
    batch: list[tuple[Any, ...]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


class NewRun(NamedTuple):
    """What indexing needs of a run the import has just created (runwriter.write_runs)."""

    pk: int
    condition: str
    status: str
    #: The run's prompt, else its eval's.
    prompt: str
    final_message: str
    #: Its conversation's events, else run.json's tool calls.
    transcript: list[Any]


def index_written(iteration: Iteration, runs: list[NewRun], graded: dict[int, Written]) -> int:
    """Index a new iteration's runs as the import has just written them, `graded` by run
    id: the documents `index_iteration` would build, without reading a transcript back (a
    third of indexing's time)."""
    notes = _notes(Run.objects.filter(iteration=iteration).values("id"))
    none = Written(pass_rate=None)
    return _write(
        (
            _row(
                run.pk,
                iteration.skill_id,
                iteration.pk,
                run.condition,
                run.status,
                graded.get(run.pk, none).pass_rate,
                run.prompt,
                run.final_message,
                graded.get(run.pk, none).evidence,
                notes[run.pk],
                run.transcript,
            )
            for run in runs
        ),
        SearchDocument.objects.filter(iteration=iteration),
    )


def index_iteration(iteration: Iteration | int) -> int:
    """Index every run of the iteration afresh; the number of runs indexed."""
    iteration_id = iteration if isinstance(iteration, int) else iteration.pk
    return _write(
        _rows(Run.objects.filter(iteration_id=iteration_id)),
        SearchDocument.objects.filter(iteration_id=iteration_id),
    )


def index_runs(run_ids: Iterable[int]) -> int:
    """Index these runs afresh (after a review or a regrade changed what they show)."""
    ids = list(run_ids)
    return _write(
        _rows(Run.objects.filter(pk__in=ids)), SearchDocument.objects.filter(run_id__in=ids)
    )


def rebuild() -> int:
    """Every run's document written afresh, one iteration at a time (which completes any
    iteration still pending, runs.search.pending); the runs indexed."""
    indexed = 0
    for pk in Iteration.objects.order_by("pk").values_list("pk", flat=True):
        with transaction.atomic():
            indexed += index_iteration(pk)
            PendingIndex.objects.filter(pk=pk).delete()
    return indexed
