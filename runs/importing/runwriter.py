"""Writing an iteration's runs, their gradings and assertion results (Writer.write_iteration)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.utils import timezone

from runs.models import (
    AssertionResult,
    Condition,
    EvalCase,
    Grading,
    GradingHistory,
    Iteration,
    Run,
)
from runs.search.index import NewRun, Written

from .columns import columns, insert_rows
from .records import ParsedGrading, ParsedRun, skill_called
from .report import ImportReport

#: AssertionResult's columns as `_gradings` inserts them.
RESULT_COLUMNS = (
    "grading_id",
    "assertion_id",
    "is_meta",
    "position",
    "passed",
    "evidence",
    "confidence",
    "grader",
    "text",
)


@dataclass
class WrittenRuns:
    """What `write_runs` wrote: the iteration's runs, and what indexing them needs."""

    #: The id of every run of the iteration now, by its folder in the source.
    by_relpath: dict[str, int]
    #: The runs this write created, and the gradings it wrote, by run id.
    created: list[NewRun]
    graded: dict[int, Written]


def write_runs(
    iteration: Iteration,
    parsed_runs: list[ParsedRun],
    conditions: dict[str, Condition],
    cases: dict[str, EvalCase],
    *,
    fresh: bool,
    report: ImportReport,
) -> WrittenRuns:
    """Create, replace, keep or remove the iteration's runs so that they are `parsed_runs`
    (`fresh`: the iteration is new, so none exists yet), with their gradings."""
    existing: dict[tuple[str, str, int], Run] = {}
    if not fresh:
        for run in iteration.runs.select_related("condition").only(
            "id", "eval_id", "run_index", "content_hash", "condition__name"
        ):
            existing[(run.eval_id, run.condition.name, run.run_index)] = run

    new: list[tuple[ParsedRun, dict[str, Any]]] = []
    rewritten: list[tuple[int, ParsedRun]] = []
    # Every run's id by its folder, in the source's order (new runs' ids come below).
    kept: dict[str, int] = {}
    for pr in parsed_runs:
        key = (pr.eval_id, pr.condition, pr.run_index)
        old = existing.pop(key, None)
        if old is not None and old.content_hash == pr.content_hash:
            report.count("runs", "skipped")
            kept[pr.source_relpath] = old.pk
            continue
        values = columns(
            pr,
            Run,
            conversation_events=len(pr.conversation),
            eval_case_id=cases[pr.eval_id].pk,
            skill_called=skill_called(pr, iteration.skill.name),
        )
        if old is None:
            row = {"iteration_id": iteration.pk, "condition_id": conditions[pr.condition].pk}
            new.append((pr, row | values))
            kept[pr.source_relpath] = 0
        else:
            Run.objects.filter(pk=old.pk).update(**values)
            rewritten.append((old.pk, pr))  # grading rewritten below
            kept[pr.source_relpath] = old.pk
            report.count("runs", "updated")
    if existing:
        # The source no longer holds these runs; the source is the truth.
        Run.objects.filter(pk__in=[r.pk for r in existing.values()]).delete()
        report.count("runs", "removed", len(existing))
    if rewritten:
        _keep_regrades([pk for pk, _ in rewritten], source=iteration.source_path)
    # Rows, not model instances: building 6,000 Runs cost more than inserting them.
    ids = insert_rows(Run, [row for _, row in new])
    created = []
    for (pr, row), pk in zip(new, ids, strict=True):
        kept[pr.source_relpath] = pk
        prompt = pr.prompt or cases[pr.eval_id].prompt or ""
        transcript = pr.conversation if row["conversation_events"] else pr.tool_invocations
        created.append(NewRun(pk, pr.condition, pr.status, prompt, pr.final_message, transcript))
    if new:
        report.count("runs", "created", len(new))
    written = [*rewritten, *((pk, pr) for pk, (pr, _) in zip(ids, new, strict=True))]
    graded = _gradings([(pk, pr.grading) for pk, pr in written if pr.grading is not None])
    return WrittenRuns(by_relpath=kept, created=created, graded=graded)


def _keep_regrades(run_ids: list[int], *, source: str) -> None:
    """Before the gradings of rewritten runs are replaced: a grading that came from the
    files is in the files again; one `regrade` wrote exists nowhere else, so it goes to
    the run's history."""
    regraded = Grading.objects.filter(run_id__in=run_ids, regraded__isnull=False)
    GradingHistory.objects.bulk_create(
        GradingHistory(
            run_id=grading.run_id,
            replaced_at=timezone.now(),
            replaced_by={"by": "re-import", "source": source},
            format=grading.format,
            pass_rate=grading.pass_rate,
            snapshot=grading.snapshot(),
        )
        for grading in regraded.prefetch_related("results")
    )
    Grading.objects.filter(run_id__in=run_ids).delete()


def _gradings(pairs: list[tuple[int, ParsedGrading]]) -> dict[int, Written]:
    """Write the runs' gradings and results (by run id); what the search index needs."""
    grading_ids = insert_rows(
        Grading, [{"run_id": run_id, **columns(pg, Grading)} for run_id, pg in pairs]
    )
    rows = [
        (
            grading_id,
            r.assertion_id,
            r.is_meta,
            position,
            r.passed,
            r.evidence,
            r.confidence,
            r.grader,
            r.text,
        )
        for grading_id, (_, pg) in zip(grading_ids, pairs, strict=True)
        for position, r in enumerate(pg.results)
    ]
    # Results are most of an import's rows (117,000 in the bench): tuples through one
    # executemany cost a third of building model instances for bulk_create.
    table = connection.ops.quote_name(AssertionResult._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c) for c in RESULT_COLUMNS)
    marks = ", ".join(["%s"] * len(RESULT_COLUMNS))
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 5000):
            cursor.executemany(
                f"INSERT INTO {table} ({names}) VALUES ({marks})", rows[start : start + 5000]
            )
    return {
        run_id: Written(
            pg.pass_rate,
            [r.evidence for r in pg.results if r.evidence and not r.is_meta],
        )
        for run_id, pg in pairs
    }
