"""Writing regraded runs: history first, the current grading rewritten in place, then the
iteration's counts, judge and warnings, and its stamp so every cached page follows."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from grading.graders.grade import summarise
from grading.graders.meta import SKILL_INVOKED_ID
from runs.changes import changed
from runs.importing import run_name
from runs.models import (
    AssertionResult,
    Grading,
    GradingHistory,
    Iteration,
    Review,
    Run,
    RunStatus,
)
from runs.warnings import MAX_NAMED, ValidityWarning, without

from .planning import multi_run_cells
from .report import Planned, RegradeReport

#: Results are written in batches of this many runs (one IN list each).
BATCH = 500


@transaction.atomic
def store_regrade(
    iteration: Iteration,
    planned: list[Planned],
    *,
    assertion_id: str | None,
    report: RegradeReport,
) -> None:
    """Write the planned gradings, the ones they replace into history, and the iteration's
    refreshed counts and warnings, all or nothing."""
    # Serialise with imports and reviews of this iteration (SQLite's IMMEDIATE transaction
    # already does; PostgreSQL needs the row lock), and read its warnings as they are now:
    # grading took minutes, and an import or a review may have changed them.
    iteration = Iteration.objects.select_for_update().get(pk=iteration.pk)
    batch = _Batch(now=timezone.now(), assertion_id=assertion_id, report=report)
    for start in range(0, len(planned), BATCH):
        batch.write(planned[start : start + BATCH])
    _refresh_iteration(iteration, report=report)
    changed(runs=[plan.run_id for plan in planned])  # new verdicts and evidence are searchable


@dataclass
class _Batch:
    """The rows one batch of runs changes, collected so each table is written once."""

    now: datetime
    assertion_id: str | None
    report: RegradeReport
    history: list[GradingHistory] = field(default_factory=list)
    gradings: list[Grading] = field(default_factory=list)
    created: list[AssertionResult] = field(default_factory=list)
    updated: dict[int, AssertionResult] = field(default_factory=dict)
    #: Results whose verdict was replaced: their reviews stop pointing at them.
    replaced: list[int] = field(default_factory=list)

    def write(self, planned: list[Planned]) -> None:
        run_ids = [p.run_id for p in planned]
        hashes = dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "content_hash"))
        current = {
            g.run_id: g
            for g in Grading.objects.select_for_update()
            .filter(run_id__in=run_ids)
            .prefetch_related("results")
        }
        for plan in planned:
            grading = current.get(plan.run_id)
            if hashes.get(plan.run_id) != plan.content_hash or plan.grading_id != (
                grading.pk if grading else None
            ):
                # Re-imported (or removed) between grading and writing: the source wins.
                self.report.skipped += 1
                self.report.note("changed", "skipped — re-imported while being regraded")
                continue
            self._apply(plan, grading)
        GradingHistory.objects.bulk_create(self.history)
        # Each review stays, with its assertion_id, as the record of what a person once said.
        Review.objects.filter(assertion_result_id__in=self.replaced).update(assertion_result=None)
        AssertionResult.objects.bulk_create(self.created, batch_size=500)
        AssertionResult.objects.bulk_update(
            list(self.updated.values()), RESULT_FIELDS, batch_size=500
        )
        Grading.objects.bulk_update(self.gradings, GRADING_FIELDS, batch_size=500)
        self.history, self.gradings, self.created = [], [], []
        self.updated, self.replaced = {}, []

    def _apply(self, plan: Planned, grading: Grading | None) -> None:
        models = sorted({r["judge_model"] for r in plan.results if r.get("judge_model")})
        if grading is None:
            grading = Grading.objects.create(
                run_id=plan.run_id,
                format=Grading.Format.EVALSITE,
                passed=0,
                failed=0,
                total=0,
                pass_rate=0.0,
            )
            rows: dict[tuple[bool, str], AssertionResult] = {}
            self.report.graded += 1
        else:
            rows = {(r.is_meta, r.assertion_id): r for r in grading.results.all()}
            self.history.append(
                GradingHistory(
                    run_id=plan.run_id,
                    replaced_at=self.now,
                    replaced_by={
                        "by": "regrade",
                        "judge_models": models,
                        "assertion": self.assertion_id,
                    },
                    format=grading.format,
                    pass_rate=grading.pass_rate,
                    snapshot=grading.snapshot(rows.values()),
                )
            )
            self.report.regraded += 1
        final: list[AssertionResult] = []
        positions = Counter[bool]()
        for result in plan.results:
            row = rows.get((result["is_meta"], result["id"]))
            if result["regraded"]:
                if row is None:
                    row = AssertionResult(grading=grading, assertion_id=result["id"])
                    self.created.append(row)
                else:
                    self.replaced.append(row.pk)
                _set_verdict(row, result)
            elif row is None:
                continue
            row.position = positions[row.is_meta]
            positions[row.is_meta] += 1
            if row.pk is not None:
                self.updated[row.pk] = row
            final.append(row)
        _summarise(grading, final)
        grading.regraded = {
            "at": self.now.isoformat(),
            "by": "regrade",
            "judge_models": models,
            "assertion": self.assertion_id,
            "regraded": [r["id"] for r in plan.results if r["regraded"]],
            "kept": [r["id"] for r in plan.results if not r["regraded"]],
            "not_graded": [r["id"] for r in plan.results if r.get("not_graded")],
        }
        self.gradings.append(grading)


RESULT_FIELDS = [
    *("is_meta", "position", "passed", "evidence", "confidence", "grader", "judge_model"),
    *("text", "override_passed"),
]
GRADING_FIELDS = [
    *("passed", "failed", "total", "pass_rate", "summary_computed", "original_summary"),
    *("meta_passed", "meta_failed", "meta_total", "skill_invoked", "has_meta_summary"),
    "regraded",
]


def _set_verdict(row: AssertionResult, result: dict[str, Any]) -> None:
    row.is_meta = result["is_meta"]
    row.passed = bool(result["passed"])
    row.evidence = str(result.get("evidence") or "")
    row.confidence = result.get("confidence")
    row.grader = str(result.get("grader") or "")[
        : AssertionResult._meta.get_field("grader").max_length
    ]
    row.judge_model = str(result.get("judge_model") or "")[:200]
    row.text = result.get("text") or row.text
    # An override was about the verdict just replaced (see the package docstring).
    row.override_passed = None


def _summarise(grading: Grading, results: list[AssertionResult]) -> None:
    """The summary from the results, as `override` keeps it: counts use the overrides that
    still stand, the graded figures are kept in `original_summary` when they differ."""
    substantive = [r for r in results if not r.is_meta]
    graded = summarise([{"passed": r.passed} for r in substantive])
    effective = summarise([{"passed": r.effective_passed} for r in substantive])
    grading.passed, grading.failed = effective["passed"], effective["failed"]
    grading.total, grading.pass_rate = effective["total"], effective["pass_rate"]
    grading.original_summary = graded if graded != effective else None
    # A regraded run's summary is evalsite's, computed from its results.
    grading.summary_computed = True
    meta = [r for r in results if r.is_meta and r.assertion_id == SKILL_INVOKED_ID]
    if meta:
        grading.meta_passed = sum(1 for r in meta if r.passed)
        grading.meta_total = len(meta)
        grading.meta_failed = grading.meta_total - grading.meta_passed
        grading.skill_invoked = meta[0].passed
        grading.has_meta_summary = True


def _refresh_iteration(iteration: Iteration, *, report: RegradeReport) -> None:
    """Keep the iteration's counts, judge and warnings true, move its `updated_at`,
    and start a new dashboard generation so every cached page is rendered afresh."""
    runs = Run.objects.filter(iteration=iteration)
    missing = runs.filter(grading__isnull=True)
    ungraded = list(
        missing.exclude(status=RunStatus.ERRORED)
        .order_by("eval_id", "condition__position", "run_index")
        .values_list("eval_id", "condition__name", "condition_id", "run_index")
    )
    multi = multi_run_cells(iteration)
    names = [
        run_name(eval_id, condition, index, (eval_id, condition_id) in multi)
        for eval_id, condition, condition_id, index in ungraded[:MAX_NAMED]
    ]
    regraded = Grading.objects.filter(run__iteration=iteration, regraded__isnull=False)
    judges = sorted(
        set(
            AssertionResult.objects.filter(grading__in=regraded)
            .exclude(judge_model="")
            .values_list("judge_model", flat=True)
        )
    )
    # The importer's "N run(s) have no grading" and the last regrade's warning, made true.
    warnings = without(iteration.validity_warnings, "no-grading", "regraded")
    if not ungraded:
        # Every run is graded now: what the import said of missing gradings is history.
        warnings = without(warnings, "outputs-without-grading", "gradings-not-read")
    if ungraded:
        unnamed = max(0, len(ungraded) - MAX_NAMED)
        params = {"n": len(ungraded), "runs": names, "unnamed": unnamed}
        warnings.append(ValidityWarning("no-grading", params).as_json())
    if count := regraded.count():
        params = {"n": count, "judges": judges}
        warnings.append(ValidityWarning("regraded", params).as_json())
    judge_model = iteration.judge_model
    judged = AssertionResult.objects.filter(grading__run__iteration=iteration, grader="llm_judge")
    models = set(judged.values_list("judge_model", flat=True).distinct())
    if report.judge_calls and len(models) == 1 and "" not in models:
        # Every verdict the iteration now shows came from this model.
        judge_model = models.pop()
    Iteration.objects.filter(pk=iteration.pk).update(
        validity_warnings=warnings, missing_gradings=missing.count(), judge_model=judge_model
    )
    Iteration.objects.filter(pk=iteration.pk).refresh_override_warnings()
