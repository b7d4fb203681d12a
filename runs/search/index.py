"""Keeping the search index exact: each write that changes what a run shows re-indexes it.

The import workflow calls `index_iteration` for every iteration it writes (in the import's
transaction, so a rejected import leaves the index as it was); reviews and `regrade` call
`index_runs`. Deleting a run, iteration or skill deletes its document (a cascade; on SQLite
the FTS5 triggers follow). `rebuild` (manage.py searchindex) writes every document afresh.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import orjson
from django.contrib.postgres.search import SearchVector
from django.db import connection, transaction
from django.db.models import Case, F, Func, QuerySet, TextField, Value, When
from django.db.models.functions import Cast

from runs.models import AssertionResult, Iteration, Review, Run, RunStatus

from .models import Outcome, SearchDocument

#: What of a tool call is indexed: its name and the first 200 characters of its arguments
#: and of its result (the command or path, the start of the output). Tool output is most of
#: a transcript's bytes and little of what people search for, and indexing it costs every
#: import: over the import bench's 18,000 runs, 500 characters added 40 % to an import's
#: CPU and 200 add 20 % (bench/README.md). Messages are indexed whole; a conversation's
#: text stops at MAX_CONVERSATION_CHARS.
TOOL_TEXT_CHARS = 200
MAX_CONVERSATION_CHARS = 300_000
_BATCH = 500


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
        text = value if isinstance(value, str) else orjson.dumps(value).decode()
        parts.append(text[:TOOL_TEXT_CHARS])
    return "\n".join(parts)


def conversation_text(conversation: list[Any], tool_invocations: list[Any]) -> str:
    text = "\n\n".join(event_text(e) for e in (conversation or tool_invocations or []))
    return text[:MAX_CONVERSATION_CHARS]


def _outcome(status: str, pass_rate: float | None) -> str:
    if status == RunStatus.ERRORED or pass_rate is None:
        return Outcome.UNGRADED
    return Outcome.PASS if pass_rate >= 1 else Outcome.FAIL


def _documents(runs: QuerySet[Run]) -> list[SearchDocument]:
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
        # One transcript as stored, decoded here by orjson (Django's JSONField decoding was a
        # third of indexing time): run.json's tool_invocations repeat the conversation's
        # tool calls, so they are read only for a run without conversation.json.
        Case(
            When(conversation_events=0, then=Cast("tool_invocations", TextField())),
            default=Cast("conversation", TextField()),
        ),
    )
    evidence: dict[int, list[str]] = defaultdict(list)
    for run_id, text in (
        AssertionResult.objects.filter(grading__run__in=runs.values("id"), is_meta=False)
        .exclude(evidence="")
        .order_by("position")
        .values_list("grading__run_id", "evidence")
    ):
        evidence[run_id].append(text)
    notes: dict[int, list[str]] = defaultdict(list)
    for run_id, text in (
        Review.objects.filter(run__in=runs.values("id"))
        .order_by("created_at")
        .values_list("run_id", "text")
    ):
        notes[run_id].append(text)
    return [
        SearchDocument(
            run_id=run_id,
            skill_id=skill_id,
            iteration_id=iteration_id,
            condition=condition,
            outcome=_outcome(status, pass_rate),
            prompt=prompt or case_prompt or "",
            final_message=final_message,
            evidence="\n".join(evidence[run_id]),
            notes="\n".join(notes[run_id]),
            conversation=conversation_text(orjson.loads(transcript), []),
        )
        for (
            run_id,
            skill_id,
            iteration_id,
            condition,
            status,
            pass_rate,
            prompt,
            case_prompt,
            final_message,
            transcript,
        ) in rows.iterator(chunk_size=_BATCH)
    ]


def _without_punctuation(field: str) -> Func:
    # PostgreSQL's parser keeps "src/report.py" or "page_size" as one word, where FTS5 and a
    # person see several; ASCII punctuation becomes a space, so both databases agree.
    return Func(
        F(field),
        Value("[[:punct:]]+"),
        Value(" "),
        Value("g"),
        function="regexp_replace",
        output_field=TextField(),
    )


def _vector() -> SearchVector:
    """The PostgreSQL document: what people look for first ranks first (weights A–C)."""
    return (
        SearchVector(_without_punctuation("final_message"), config="simple", weight="A")
        + SearchVector(_without_punctuation("prompt"), config="simple", weight="A")
        + SearchVector(_without_punctuation("evidence"), config="simple", weight="B")
        + SearchVector(_without_punctuation("notes"), config="simple", weight="B")
        + SearchVector(_without_punctuation("conversation"), config="simple", weight="C")
    )


def _write(runs: QuerySet[Run], documents: QuerySet[SearchDocument]) -> int:
    """Replace the documents of these runs (the old ones selected by `documents`)."""
    with transaction.atomic():
        documents.delete()
        built = 0
        batch: list[SearchDocument] = []
        for document in _documents(runs):
            batch.append(document)
            if len(batch) == _BATCH:
                built += _insert(batch)
                batch = []
        built += _insert(batch)
    return built


def _insert(batch: list[SearchDocument]) -> int:
    if not batch:
        return 0
    SearchDocument.objects.bulk_create(batch)
    if connection.vendor == "postgresql":
        SearchDocument.objects.filter(pk__in=[d.pk for d in batch]).update(vector=_vector())
    return len(batch)


def index_iteration(iteration: Iteration | int) -> int:
    """Index every run of the iteration afresh; the number of runs indexed."""
    iteration_id = iteration if isinstance(iteration, int) else iteration.pk
    return _write(
        Run.objects.filter(iteration_id=iteration_id),
        SearchDocument.objects.filter(iteration_id=iteration_id),
    )


def index_runs(run_ids: Iterable[int]) -> int:
    """Index these runs afresh (after a review or a regrade changed what they show)."""
    ids = list(run_ids)
    return _write(Run.objects.filter(pk__in=ids), SearchDocument.objects.filter(run_id__in=ids))


def rebuild() -> int:
    """Every run's document written afresh, one iteration at a time; the runs indexed."""
    return sum(
        index_iteration(pk) for pk in Iteration.objects.order_by("pk").values_list("pk", flat=True)
    )
