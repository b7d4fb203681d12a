"""Regrading imported runs through the graders runevals uses (`manage.py regrade`, SPEC §6).

An imported run keeps its prompt, final message, transcript and `outputs/`, not its task
folder: `transcript_check` and `__skill_invoked` are recomputed from the stored transcript,
`llm_judge` assertions are asked again (of the assertion's model, else the one given, else the
iteration's, else EVALSITE_JUDGE_MODEL), and `command_check`/`diff_scope` keep their recorded
result (an ungraded run gets them as not graded, FAIL with confidence 0, unless a recorded
diff-scope.json measures it). The replaced grading is kept in GradingHistory; an override of
a regraded verdict stops counting. Every judge call is made before anything is written, and
the writes are one transaction (`storing`), so an iteration never mixes two judges half-way.
Errored runs are never graded. `planning` computes each run's new results, `storing` writes.
"""

from __future__ import annotations

import anthropic
from django.conf import settings
from django.db.models import QuerySet

from grading.graders.meta import SKILL_INVOKED_ID
from runs.models import EvalCase, Iteration, IterationNotFound, Run, RunStatus
from runs.warnings import MAX_NAMED

from .planning import grade_runs, judge_record
from .report import JudgeFailed, JudgeNeeded, Progress, RegradeError, RegradeReport
from .storing import store_regrade

__all__ = [
    "JudgeFailed",
    "JudgeNeeded",
    "RegradeError",
    "RegradeReport",
    "find_iteration",
    "judge_record",
    "regrade_iteration",
]


def find_iteration(*, skill: str, iteration: str) -> Iteration:
    """The skill's iteration by evalsite's number or the source's label (`iteration-4`)."""
    try:
        return Iteration.objects.named(skill, iteration)
    except IterationNotFound as exc:
        raise RegradeError(str(exc)) from None


def regrade_iteration(
    *,
    iteration: Iteration,
    only_missing: bool,
    judge_model: str | None,
    assertion_id: str | None,
    client: anthropic.Anthropic | None,
    progress: Progress | None = None,
) -> RegradeReport:
    """Grade the iteration's runs that have none and (unless `only_missing`) regrade the
    others; with `assertion_id`, regrade only that assertion of each graded run.

    Errored runs are never graded (SPEC §6). Raises RegradeError for a request that cannot
    be met, JudgeNeeded before any call when judge assertions are due and `client` is None,
    JudgeFailed (nothing saved) when the judge cannot be reached.
    """
    if only_missing and assertion_id:
        raise RegradeError(
            "--only-missing grades whole runs that have no grading; --assertion regrades one "
            "assertion of graded runs: give one of them"
        )
    model = judge_model or iteration.judge_model or settings.EVALSITE_JUDGE_MODEL
    report = RegradeReport(iteration=str(iteration), judge_model=model)
    runs = iteration.runs.all()
    errored = runs.filter(status=RunStatus.ERRORED).count()
    if errored:
        report.skipped += errored
        report.note("errored", "are never graded (kept out of pass rates)")
    runs = runs.exclude(status=RunStatus.ERRORED)
    if assertion_id:
        _check_assertion(iteration, assertion_id)
        ungraded = runs.filter(grading__isnull=True).count()
        if ungraded:
            report.skipped += ungraded
            report.note("ungraded", "left alone: --assertion regrades graded runs only")
        runs = runs.filter(grading__isnull=False)
    elif only_missing:
        graded = runs.filter(grading__isnull=False).count()
        report.skipped += graded
        runs = runs.filter(grading__isnull=True)
    judged = _judge_assertions(runs, assertion_id)
    if judged and client is None:
        raise JudgeNeeded(
            f"ANTHROPIC_API_KEY is not set: regrading {iteration} asks the judge "
            f"({', '.join(judged[:MAX_NAMED])}{' …' if len(judged) > MAX_NAMED else ''})"
        )

    planned = grade_runs(
        iteration,
        runs,
        judge_model=model,
        assertion_id=assertion_id,
        client=client,
        report=report,
        progress=progress,
    )
    store_regrade(iteration, planned, assertion_id=assertion_id, report=report)
    return report


def _check_assertion(iteration: Iteration, assertion_id: str) -> None:
    if assertion_id == SKILL_INVOKED_ID:
        return
    ids: dict[str, None] = {}
    for case in EvalCase.objects.filter(runs__iteration=iteration).distinct():
        ids |= dict.fromkeys(str(a.get("id", "")) for a in case.assertions if isinstance(a, dict))
    if assertion_id not in ids:
        known = ", ".join(list(ids)[:MAX_NAMED]) + (" …" if len(ids) > MAX_NAMED else "")
        raise RegradeError(
            f"{iteration} has no assertion {assertion_id!r} in its eval definitions "
            f"(they have: {known or 'none'}; or {SKILL_INVOKED_ID})"
        )


def _judge_assertions(runs: QuerySet[Run], assertion_id: str | None) -> list[str]:
    """The ids of judge assertions the runs' definitions would have asked."""
    ids: dict[str, None] = {}
    for case in EvalCase.objects.filter(runs__in=runs).distinct():
        for assertion in case.assertions:
            if (
                isinstance(assertion, dict)
                and assertion.get("type") == "llm_judge"
                and assertion_id in (None, assertion["id"])
            ):
                ids[str(assertion["id"])] = None
    return list(ids)
