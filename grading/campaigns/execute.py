"""What a worker does with a queued run: claim it, play it exactly as runevals does here, record
it once, and finalise the iteration when its last run is in.

Exactly once, with late acknowledgement (a message may be delivered twice, never lost):
- a run is claimed by a conditional update (pending, or running with a silent worker), so
  only one attempt plays it at a time; a second delivery of a live run is deferred;
- the playing worker heartbeats; one silent for three beats has its run taken over;
- each attempt's files go to their own place in the store, and the run is recorded by a
  conditional update naming the attempt: a superseded attempt records nothing;
- the iteration is finalised by whoever moves it from running to finalising (another
  conditional update), after its last run is recorded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import F, Q
from django.utils import timezone

from grading.evaluating.plan import Plan, RunPlan
from grading.evaluating.report import iteration_report
from grading.evaluating.runner import IterationRun, Runner, RunOutcome, write_error
from grading.evaluating.sandbox import unsandboxed
from runs.importing import ImportFailure, import_workspace
from runs.models import Iteration

from .models import QueuedIteration, QueuedRun
from .options import CampaignOptions
from .store import RunStore, unpack_skill
from .workflow import anthropic_client

log = logging.getLogger(__name__)

#: Attempts at a run that fail for an unexpected reason before it is recorded as errored.
MAX_ATTEMPTS = 3


class Deferred(Exception):
    """Not now: another worker is playing this run (or finalising); try again later."""

    def __init__(self, countdown: float):
        super().__init__(f"deferred for {countdown:.1f} s")
        self.countdown = countdown


def worker_name() -> str:
    return f"{socket.gethostname()} pid {os.getpid()}"


def _silent_since() -> datetime:
    """Heartbeats older than this are from a worker presumed lost."""
    return timezone.now() - timedelta(seconds=3 * settings.EVALSITE_QUEUE_HEARTBEAT)


def play_queued_run(pk: int) -> None:
    """The task's body: play run `pk` unless it is finished or held; then maybe finalise."""
    run = QueuedRun.objects.select_related("iteration__campaign").filter(pk=pk).first()
    if run is None:  # its campaign was deleted
        return
    iteration = run.iteration
    _forget_finished_iterations()
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
            | Q(state=QueuedRun.State.RUNNING, heartbeat_at__lt=_silent_since())
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
        folder = _scratch(iteration.pk) / "runs"
        try:
            outcome = _play(iteration, options, folder, planned)
            store.put_folder(folder / planned.relpath, attempt_key)
        except Exception as exc:  # a bug, or this machine's or the store's trouble
            log.exception("queued run %s failed on %s", run, worker_name())
            shutil.rmtree(folder / planned.relpath, ignore_errors=True)
            if run.attempts < MAX_ATTEMPTS:
                QueuedRun.objects.filter(pk=run.pk, attempt=attempt).update(
                    state=QueuedRun.State.PENDING, attempt=""
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
    if (problem := _problem_here(options)) is not None:
        return _errored(folder, planned, f"worker {socket.gethostname()}: {problem}")
    runner = _runner(iteration, options)
    with sandbox_mode(options.sandbox):
        return runner.run_one(folder, planned)


def _errored(folder: Path, planned: RunPlan, message: str) -> RunOutcome:
    """A run that could not be played at all: an error.json, so it is imported as errored."""
    target = folder / planned.relpath
    target.mkdir(parents=True, exist_ok=True)
    error = " ".join(message.split())[:300]
    write_error(target, error, "WorkerError")
    return RunOutcome(planned, errored=error)


_problems: dict[tuple, str | None] = {}


def _problem_here(options: CampaignOptions) -> str | None:
    """options.problem_playing_here(), once per process and options (it starts bubblewrap)."""
    key = (options.harness, options.sandbox)
    if key not in _problems:
        _problems[key] = options.problem_playing_here()
    return _problems[key]


# --- finalising ---------------------------------------------------------------------------


def maybe_finalise(pk: int) -> None:
    """Finalise iteration `pk` if its last run is recorded and nobody (alive) is doing it."""
    if QueuedRun.objects.filter(iteration_id=pk).exclude(state__in=QueuedRun.FINISHED).exists():
        return
    me = worker_name()
    won = (
        QueuedIteration.objects.filter(pk=pk)
        .filter(
            Q(state=QueuedIteration.State.RUNNING)
            | Q(state=QueuedIteration.State.FINALISING, finalising_at__lt=_silent_since())
        )
        .update(state=QueuedIteration.State.FINALISING, finaliser=me, finalising_at=timezone.now())
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
            mine.update(
                state=QueuedIteration.State.FAILED,
                error=f"import failed: {exc.message}",
                finished_at=timezone.now(),
            )
            return
        except Exception as exc:
            log.exception("finalising %s failed on %s", iteration, me)
            mine.update(
                state=QueuedIteration.State.FAILED,
                error=f"finalising failed on {me}: {type(exc).__name__}: {exc}",
                finished_at=timezone.now(),
            )
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
    _forget(iteration.pk)


def _assemble_and_import(iteration: QueuedIteration) -> dict:
    store = RunStore()
    folder = store.local_path(iteration.store_key)
    downloaded = folder is None
    if downloaded:  # an object store: the folder is put together here, then stored whole
        folder = settings.EVALSITE_WORKSPACE_DIR / iteration.skill_name / iteration.label
        shutil.rmtree(folder, ignore_errors=True)
        store.get_folder(iteration.store_key, folder)
    options = CampaignOptions.from_data(iteration.campaign.options)
    runner = _runner(iteration, options)
    runs = list(iteration.runs.all())
    for run in runs:
        relpath = run.plan_run().relpath
        if downloaded:
            shutil.rmtree(folder / relpath, ignore_errors=True)
            store.get_folder(run.attempt_key, folder / relpath)
        elif store.has_folder(run.attempt_key):  # (else moved by a finaliser that was lost)
            store.move_folder(run.attempt_key, f"{iteration.store_key}/{relpath}")
    runner.finish(folder)
    if downloaded:
        store.put_folder(folder, iteration.store_key)
    import_workspace([folder])
    result = IterationRun(iteration.skill_name, folder, [run.outcome() for run in runs])
    return iteration_report(result)


# --- this process's share of the work -----------------------------------------------------

_runners: dict[int, Runner] = {}
_runners_lock = threading.Lock()


def _scratch(pk: int) -> Path:
    """This process's own working folder for queued iteration `pk` (task folders,
    templates, the skill): never shared, as two processes would rebuild each other's."""
    owner = f"{socket.gethostname()}-{os.getpid()}"
    return settings.EVALSITE_WORKSPACE_DIR / ".worker" / owner / str(pk)


def _runner(iteration: QueuedIteration, options: CampaignOptions) -> Runner:
    """One Runner per iteration and process, so each eval's template is built once here."""
    with _runners_lock:
        if iteration.pk not in _runners:
            scratch = _scratch(iteration.pk)
            skill_dir = scratch / "skill"
            if not skill_dir.is_dir():
                archive = RunStore().read(f"{iteration.internals_key}/skill.tar.gz")
                scratch.mkdir(parents=True, exist_ok=True)
                with tempfile.TemporaryDirectory(dir=scratch) as unpacked:
                    os.replace(unpack_skill(archive, Path(unpacked)), skill_dir)
            plan = Plan.from_data(iteration.plan, skill_dir)
            settings_ = options.runner_settings(scratch)
            _runners[iteration.pk] = Runner(plan, anthropic_client(), settings_)
        return _runners[iteration.pk]


def _forget(pk: int) -> None:
    """Drop the iteration's runner, and its scratch folder unless --keep-env asked to keep
    the task folders (then they stay here, under `.worker/`)."""
    with _runners_lock:
        runner = _runners.pop(pk, None)
    if runner is None or not runner.settings.keep_env:
        shutil.rmtree(_scratch(pk), ignore_errors=True)


def _forget_finished_iterations() -> None:
    """Drop the runners (and scratch) of iterations another worker finalised."""
    with _runners_lock:
        held = list(_runners)
    if held:
        active = set(
            QueuedIteration.objects.active().filter(pk__in=held).values_list("pk", flat=True)
        )
        for pk in set(held) - active:
            _forget(pk)


def clean_lost_scratch() -> None:
    """Remove the scratch folders of this host's worker processes that are gone (a worker
    killed mid-run leaves its task folders behind)."""
    root = settings.EVALSITE_WORKSPACE_DIR / ".worker"
    host = socket.gethostname()
    for folder in root.glob(f"{host}-*") if root.is_dir() else []:
        pid = folder.name.removeprefix(f"{host}-")
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:
            pass  # alive, another user's


@contextlib.contextmanager
def heartbeat(beat: Callable[[], None]) -> Iterator[None]:
    """Call `beat` every EVALSITE_QUEUE_HEARTBEAT seconds from a thread while inside."""
    stop = threading.Event()

    def loop() -> None:
        try:
            while not stop.wait(settings.EVALSITE_QUEUE_HEARTBEAT):
                try:
                    beat()
                except DatabaseError:
                    log.warning("heartbeat failed; the next one may get through", exc_info=True)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=loop, name="evalsite-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


class _SandboxMode:
    """`unsandboxed()` is process-wide: in one worker process, runs of an --unsafe-no-sandbox
    campaign never overlap runs that must be sandboxed (each waits for the other kind)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._sandboxed: bool | None = None
        self._inside = 0
        self._exit = contextlib.ExitStack()

    @contextlib.contextmanager
    def __call__(self, sandboxed: bool) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: self._inside == 0 or self._sandboxed == sandboxed)
            if self._inside == 0:
                self._sandboxed = sandboxed
                self._exit.enter_context(unsandboxed(not sandboxed))
            self._inside += 1
        try:
            yield
        finally:
            with self._changed:
                self._inside -= 1
                if self._inside == 0:
                    self._exit.close()
                    self._changed.notify_all()


sandbox_mode = _SandboxMode()
