"""What a worker does with a queued run: claim it, play it exactly as runevals does here, record
it once, and finalise the iteration when its last run is in.

Exactly once, with late acknowledgement (a message may be delivered twice, never lost):
- a run is claimed by a conditional update (pending, or running with a silent worker), so
  only one attempt plays it at a time; a second delivery of a live run is deferred;
- the playing worker heartbeats; one silent for three beats has its run sent again by the
  sweep (recovery.py) and taken over by the worker that claims it;
- each attempt's files go to their own place in the store, and the run is recorded by a
  conditional update naming the attempt: a superseded attempt records nothing;
- the iteration is finalised by whoever moves it from running to finalising (another
  conditional update), after its last run is recorded.
"""

from __future__ import annotations

import logging
import shutil
import socket
import uuid
from pathlib import Path

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from grading.alerts.events import alert_failed, alert_imported
from grading.evaluating.plan import RunPlan
from grading.evaluating.runfolder import write_error
from grading.evaluating.runner import IterationRun, RunOutcome
from runs.importing import ImportFailure, import_workspace
from runs.models import Iteration

from .models import QueuedIteration, QueuedRun, silent_since
from .options import CampaignOptions
from .report import iteration_report
from .store import RunStore
from .worker import (
    forget,
    forget_finished_iterations,
    heartbeat,
    problem_here,
    runner,
    sandbox_mode,
    scratch,
    worker_name,
)

log = logging.getLogger(__name__)

#: Attempts at a run that fail for an unexpected reason before it is recorded as errored.
MAX_ATTEMPTS = 3


class Deferred(Exception):
    """Not now: another worker is playing this run (or finalising); try again later."""

    def __init__(self, countdown: float):
        super().__init__(f"deferred for {countdown:.1f} s")
        self.countdown = countdown


def play_queued_run(pk: int) -> None:
    """The task's body: play run `pk` unless it is finished or held; then maybe finalise."""
    run = QueuedRun.objects.select_related("iteration__campaign").filter(pk=pk).first()
    if run is None:
        log.warning("queued run #%s does not exist (its campaign was deleted?): dropped", pk)
        return
    iteration = run.iteration
    forget_finished_iterations()
    if iteration.state == QueuedIteration.State.RUNNING and run.state not in QueuedRun.FINISHED:
        attempt = _claim(run)
        if attempt is None:
            run.refresh_from_db()
            if run.state not in QueuedRun.FINISHED:
                raise Deferred(settings.EVALSITE_QUEUE_HEARTBEAT)
        else:
            _play_and_record(run, attempt)
    maybe_finalise(iteration.pk)


def _claim(run: QueuedRun) -> str | None:
    attempt = uuid.uuid4().hex
    claimed = (
        QueuedRun.objects.filter(pk=run.pk)
        .filter(
            Q(state=QueuedRun.State.PENDING)
            | Q(state=QueuedRun.State.RUNNING, heartbeat_at__lt=silent_since(timezone.now()))
        )
        .update(
            state=QueuedRun.State.RUNNING,
            attempt=attempt,
            worker=worker_name(),
            heartbeat_at=timezone.now(),
            attempts=F("attempts") + 1,
        )
    )
    if not claimed:
        return None
    run.refresh_from_db()
    return attempt


def _play_and_record(run: QueuedRun, attempt: str) -> None:
    iteration = run.iteration
    options = CampaignOptions.from_data(iteration.campaign.options)
    store = RunStore()
    planned = run.plan_run()
    attempt_key = f"{iteration.internals_key}/attempts/{attempt}"

    def beat() -> None:
        mine = QueuedRun.objects.filter(pk=run.pk, attempt=attempt, state=QueuedRun.State.RUNNING)
        mine.update(heartbeat_at=timezone.now())

    with heartbeat(beat):
        folder = scratch(iteration.pk) / "runs"
        try:
            outcome = _play(iteration, options, folder, planned)
            store.put_folder(folder / planned.relpath, attempt_key)
        except Exception as exc:  # a bug, or this machine's or the store's trouble
            log.exception("queued run %s failed on %s", run, worker_name())
            shutil.rmtree(folder / planned.relpath, ignore_errors=True)
            if run.attempts < MAX_ATTEMPTS:
                QueuedRun.objects.filter(pk=run.pk, attempt=attempt).update(
                    state=QueuedRun.State.PENDING, attempt="", sent_at=timezone.now()
                )
                raise Deferred(settings.EVALSITE_QUEUE_HEARTBEAT) from exc
            outcome = _errored(folder, planned, f"{type(exc).__name__}: {exc}")
            store.put_folder(folder / planned.relpath, attempt_key)
        finally:
            shutil.rmtree(folder / planned.relpath, ignore_errors=True)
    recorded = QueuedRun.objects.filter(
        pk=run.pk, attempt=attempt, state=QueuedRun.State.RUNNING
    ).update(
        state=QueuedRun.State.ERRORED if outcome.errored else QueuedRun.State.DONE,
        finished_at=timezone.now(),
        passed=outcome.passed,
        total=outcome.total,
        tokens=outcome.tokens + outcome.judge_tokens,
        calls=outcome.calls + outcome.judge_calls,
        seconds=outcome.seconds,
        error=outcome.errored or "",
    )
    if not recorded:  # taken over while this worker was silent: the other attempt counts
        store.delete_folder(attempt_key)


def _play(
    iteration: QueuedIteration, options: CampaignOptions, folder: Path, planned: RunPlan
) -> RunOutcome:
    """The run, played here exactly as runevals plays it locally (Runner.run_one)."""
    if (problem := problem_here(options)) is not None:
        return _errored(folder, planned, f"worker {socket.gethostname()}: {problem}")
    with sandbox_mode(options.sandbox):
        return runner(iteration, options).run_one(folder, planned)


def _errored(folder: Path, planned: RunPlan, message: str) -> RunOutcome:
    """A run that could not be played at all: an error.json, so it is imported as errored."""
    target = folder / planned.relpath
    target.mkdir(parents=True, exist_ok=True)
    error = " ".join(message.split())[:300]
    write_error(target, error, "WorkerError")
    return RunOutcome(planned, errored=error)


# --- finalising ---------------------------------------------------------------------------


def finalise_queued_iteration(pk: int) -> None:
    """The finalise task's body (--resume, the sweep): maybe_finalise an iteration that exists."""
    if not QueuedIteration.objects.filter(pk=pk).exists():
        log.warning("queued iteration #%s does not exist (its campaign was deleted?): dropped", pk)
        return
    maybe_finalise(pk)


def maybe_finalise(pk: int) -> None:
    """Finalise iteration `pk` if its last run is recorded and nobody (alive) is doing it."""
    if QueuedRun.objects.filter(iteration_id=pk).exclude(state__in=QueuedRun.FINISHED).exists():
        return
    me, now = worker_name(), timezone.now()
    won = (
        QueuedIteration.objects.filter(pk=pk)
        .filter(
            Q(state=QueuedIteration.State.RUNNING)
            | Q(state=QueuedIteration.State.FINALISING, finalising_at__lt=silent_since(now))
        )
        .update(state=QueuedIteration.State.FINALISING, finaliser=me, finalising_at=now)
    )
    if won:
        finalise(QueuedIteration.objects.select_related("campaign").get(pk=pk), me)
    elif QueuedIteration.objects.filter(pk=pk, state=QueuedIteration.State.FINALISING).exists():
        raise Deferred(settings.EVALSITE_QUEUE_HEARTBEAT)  # if its finaliser is lost, take over


def finalise(iteration: QueuedIteration, me: str) -> None:
    """Assemble the iteration folder from the store, write benchmark.json, import it."""
    mine = QueuedIteration.objects.filter(
        pk=iteration.pk, finaliser=me, state=QueuedIteration.State.FINALISING
    )
    with heartbeat(lambda: mine.update(finalising_at=timezone.now())):
        try:
            report = _assemble_and_import(iteration)
        except ImportFailure as exc:
            error = f"import failed: {exc.message}"
            if mine.update(
                state=QueuedIteration.State.FAILED, error=error, finished_at=timezone.now()
            ):
                _alert_failed(iteration, error)
            return
        except Exception as exc:
            log.exception("finalising %s failed on %s", iteration, me)
            error = f"finalising failed on {me}: {type(exc).__name__}: {exc}"
            if mine.update(
                state=QueuedIteration.State.FAILED, error=error, finished_at=timezone.now()
            ):
                _alert_failed(iteration, error)
            return
    imported = Iteration.objects.filter(
        skill__name=iteration.skill_name, source_path=report["folder"]
    ).first()
    if mine.update(
        state=QueuedIteration.State.IMPORTED,
        report=report,
        iteration=imported,
        finished_at=timezone.now(),
    ):
        RunStore().delete_folder(iteration.internals_key)
        if CampaignOptions.from_data(iteration.campaign.options).alerts:
            alert_imported(report)  # once: only the finaliser whose update took says it
    forget(iteration.pk)


def _alert_failed(iteration: QueuedIteration, error: str) -> None:
    if CampaignOptions.from_data(iteration.campaign.options).alerts:
        alert_failed(
            [iteration.skill_name],
            error,
            label=iteration.label,
            campaign_path=iteration.campaign.get_absolute_url(),
        )


def _assemble_and_import(iteration: QueuedIteration) -> dict:
    store = RunStore()
    folder = store.local_path(iteration.store_key)
    downloaded = folder is None
    if downloaded:  # an object store: the folder is put together here, then stored whole
        folder = settings.EVALSITE_WORKSPACE_DIR / iteration.skill_name / iteration.label
        shutil.rmtree(folder, ignore_errors=True)
        store.get_folder(iteration.store_key, folder)
    options = CampaignOptions.from_data(iteration.campaign.options)
    played_by = runner(iteration, options)
    runs = list(iteration.runs.all())
    for run in runs:
        relpath = run.plan_run().relpath
        if downloaded:
            shutil.rmtree(folder / relpath, ignore_errors=True)
            store.get_folder(run.attempt_key, folder / relpath)
        elif store.has_folder(run.attempt_key):  # (else moved by a finaliser that was lost)
            store.move_folder(run.attempt_key, f"{iteration.store_key}/{relpath}")
    played_by.finish(folder)
    if downloaded:
        store.put_folder(folder, iteration.store_key)
    import_workspace([folder])
    result = IterationRun(iteration.skill_name, folder, [run.outcome() for run in runs])
    return iteration_report(result)
