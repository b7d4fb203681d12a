"""What one worker process keeps to itself while it plays queued runs: a scratch folder and a
Runner per iteration, the answer to "can this machine play these runs?", the heartbeat
thread that signals a run or a finalisation is alive, and the process-wide sandbox mode.

Nothing here is shared with other workers; what they share is in the database and the store.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection

from grading.anthropic_client import anthropic_client
from grading.evaluating.plan import Plan
from grading.evaluating.runner import Runner
from grading.sandbox import unsandboxed

from .models import QueuedIteration
from .options import CampaignOptions
from .store import RunStore, unpack_skill

log = logging.getLogger(__name__)


def worker_name() -> str:
    return f"{socket.gethostname()} pid {os.getpid()}"


_problems: dict[tuple, str | None] = {}


def problem_here(options: CampaignOptions) -> str | None:
    """options.problem_playing_here(), once per process and options (it starts bubblewrap)."""
    key = (options.harness, options.sandbox)
    if key not in _problems:
        _problems[key] = options.problem_playing_here()
    return _problems[key]


_runners: dict[int, Runner] = {}
_runners_lock = threading.Lock()


def scratch(pk: int) -> Path:
    """This process's own working folder for queued iteration `pk` (task folders,
    templates, the skill): never shared, as two processes would rebuild each other's."""
    owner = f"{socket.gethostname()}-{os.getpid()}"
    return settings.EVALSITE_WORKSPACE_DIR / ".worker" / owner / str(pk)


def runner(iteration: QueuedIteration, options: CampaignOptions) -> Runner:
    """One Runner per iteration and process, so each eval's template is built once here."""
    with _runners_lock:
        if iteration.pk not in _runners:
            folder = scratch(iteration.pk)
            skill_dir = folder / "skill"
            if not skill_dir.is_dir():
                archive = RunStore().read(f"{iteration.internals_key}/skill.tar.gz")
                folder.mkdir(parents=True, exist_ok=True)
                with tempfile.TemporaryDirectory(dir=folder) as unpacked:
                    os.replace(unpack_skill(archive, Path(unpacked)), skill_dir)
            plan = Plan.from_data(iteration.plan, skill_dir)
            settings_ = options.runner_settings(folder)
            _runners[iteration.pk] = Runner(plan, anthropic_client(), settings_)
        return _runners[iteration.pk]


def forget(pk: int) -> None:
    """Drop the iteration's runner, and its scratch folder unless --keep-env asked to keep
    the task folders (then they stay here, under `.worker/`)."""
    with _runners_lock:
        held = _runners.pop(pk, None)
    if held is None or not held.settings.keep_env:
        shutil.rmtree(scratch(pk), ignore_errors=True)


def forget_finished_iterations() -> None:
    """Drop the runners (and scratch) of iterations another worker finalised."""
    with _runners_lock:
        held = list(_runners)
    if held:
        active = set(
            QueuedIteration.objects.active().filter(pk__in=held).values_list("pk", flat=True)
        )
        for pk in set(held) - active:
            forget(pk)


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
