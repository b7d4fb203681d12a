"""Writing an iteration's runs, their gradings and assertion results (Writer.write_iteration)."""

from __future__ import annotations

from dataclasses import dataclass

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
from runs.search.index import Written

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

    #: Every run of the iteration now, by its folder in the source.
    by_relpath: dict[str, Run]
    #: The runs this write created, and the gradings it wrote, by run id.
    created: list[Run]
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

    to_create: list[tuple[Run, ParsedRun]] = []
    replaced_gradings: list[int] = []
    kept: dict[str, Run] = {}
    for pr in parsed_runs:
        key = (pr.eval_id, pr.condition, pr.run_index)
        old = existing.pop(key, None)
        if old is not None and old.content_hash == pr.content_hash:
            report.count("runs", "skipped")
            kept[pr.source_relpath] = old
            continue
        values = columns(
            pr,
            Run,
            conversation_events=len(pr.conversation),
            eval_case=cases[pr.eval_id],
            skill_called=skill_called(pr, iteration.skill.name),
        )
        if old is None:
            run = Run(iteration=iteration, condition=conditions[pr.condition], **values)
            to_create.append((run, pr))
        else:
            Run.objects.filter(pk=old.pk).update(**values)
            replaced_gradings.append(old.pk)
            to_create.append((old, pr))  # grading rewritten below
            report.count("runs", "updated")
        kept[pr.source_relpath] = to_create[-1][0]
    if existing:
        # The source no longer holds these runs; the source is the truth.
        Run.objects.filter(pk__in=[r.pk for r in existing.values()]).delete()
        report.count("runs", "removed", len(existing))
    if replaced_gradings:
        # A grading that came from the files is in the files again; one `regrade` wrote
        # exists nowhere else, so it goes to the run's history before it is replaced.
        regraded = Grading.objects.filter(
            run_id__in=replaced_gradings, regraded__isnull=False
        ).prefetch_related("results")
        GradingHistory.objects.bulk_create(
            GradingHistory(
                run_id=grading.run_id,
                replaced_at=timezone.now(),
                replaced_by={"by": "re-import", "source": iteration.source_path},
                format=grading.format,
                pass_rate=grading.pass_rate,
                snapshot=grading.snapshot(),
            )
            for grading in regraded
        )
        Grading.objects.filter(run_id__in=replaced_gradings).delete()
    new_runs = [run for run, _ in to_create if run.pk is None]
    _insert_runs(new_runs)
    if new_runs:
        report.count("runs", "created", len(new_runs))
    graded = _gradings([(run, pr.grading) for run, pr in to_create if pr.grading is not None])
    return WrittenRuns(by_relpath=kept, created=new_runs, graded=graded)


def _insert_runs(runs: list[Run]) -> None:
    """Insert new Run instances, giving each its id (what bulk_create does, faster)."""
    names = [f.attname for f in Run._meta.concrete_fields if not f.primary_key]
    ids = insert_rows(Run, [{name: getattr(run, name) for name in names} for run in runs])
    for run, pk in zip(runs, ids, strict=True):
        run.pk = pk
        run._state.adding = False
        run._state.db = connection.alias


def _gradings(pairs: list[tuple[Run, ParsedGrading]]) -> dict[int, Written]:
    """Write the runs' gradings and results; what the search index needs of each."""
    grading_ids = insert_rows(
        Grading, [{"run_id": run.pk, **columns(pg, Grading)} for run, pg in pairs]
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
        run.pk: Written(
            pg.pass_rate,
            [r.evidence for r in pg.results if r.evidence and not r.is_meta],
        )
        for run, pg in pairs
    }
