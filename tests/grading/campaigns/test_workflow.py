"""`runevals --queue` in one process: Celery runs each task as it is sent (or holds them), so
the workflow, the worker's code and the database's exactly-once rules are tested quickly;
test_workers.py runs the same with a real Redis and real worker processes."""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import InMemoryStorage
from django.core.management import CommandError, call_command
from django.db import OperationalError, connection
from django.utils import timezone

from grading.campaigns import execute, worker
from grading.campaigns.models import Campaign, QueuedIteration, QueuedRun
from grading.campaigns.store import RunStore
from runs.models import Iteration, Run
from tests.fakeapi import FakeAnthropic
from tests.grading.test_runevals import EVALS, make_skill

pytestmark = pytest.mark.django_db


def runevals(*args: str) -> str:
    out = io.StringIO()
    call_command("runevals", "--harness", "messages", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_a_queued_campaign_is_played_finalised_and_imported_once(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, celery_here: None
) -> None:
    skill = make_skill(tmp_path)

    out = runevals("--queue", "--wait", str(skill), "--runs", "2")

    campaign = Campaign.objects.get()
    assert out.splitlines()[0].startswith(f"Queued campaign #{campaign.pk}: demo iteration-1 (8 ")
    assert f"/campaigns/{campaign.pk}/" in out.splitlines()[0]
    assert "[8/8] " in out and out.splitlines()[-1].startswith("demo #1 (iteration-1); with_skill")
    queued = QueuedIteration.objects.get()
    assert queued.state == "imported" and queued.report["runs"] == 8
    assert set(queued.runs.values_list("state", "attempts")) == {("done", 1)}
    iteration = Iteration.objects.get()
    assert queued.iteration == iteration and iteration.runs.count() == 8
    # The iteration folder is in the run store, complete; the queue's own files are gone.
    folder = tmp_path / "store" / "demo" / "iteration-1"
    assert iteration.source_path == str(folder)
    assert (folder / "benchmark.json").is_file() and (folder / "conditions.json").is_file()
    assert (folder / "eval-write-notes" / "with_skill" / "run-2" / "conversation.json").is_file()
    assert not (tmp_path / "store" / ".queue").exists()
    run = Run.objects.filter(condition__name="with_skill").first()
    assert run.conversation and run.artifacts  # what the run page shows, from the store


def test_the_json_summary_and_exit_codes_are_runevals_own(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, celery_here: None
) -> None:
    skill = make_skill(tmp_path)

    report = json.loads(runevals("--queue", "--wait", "--json", str(skill)))

    assert report["skill"] == "demo" and report["runs"] == 4 and report["errored"] == 0


def test_queue_without_a_broker_exits_2_before_any_work(
    tmp_path: Path, workspace: Path, settings
) -> None:
    settings.CELERY_BROKER_URL = ""
    with pytest.raises(CommandError) as info:
        runevals("--queue", str(make_skill(tmp_path)))
    assert info.value.returncode == 2
    assert str(info.value).startswith("runevals --queue needs CELERY_BROKER_URL")
    assert not Campaign.objects.exists()


def test_wait_without_queue_is_refused(tmp_path: Path, workspace: Path) -> None:
    with pytest.raises(CommandError, match="--wait follows a queued campaign") as info:
        runevals("--wait", str(make_skill(tmp_path)))
    assert info.value.returncode == 2


def test_a_fixture_outside_the_skill_folder_cannot_be_queued(
    tmp_path: Path, workspace: Path, celery_held: None
) -> None:
    (tmp_path / "shared.txt").write_text("shared\n")
    evals = [{**EVALS[1], "files_root": "../..", "files": ["shared.txt"]}]
    skill = make_skill(tmp_path, evals)

    # Refused as the plan is made (files_root may not climb out), before anything is queued.
    with pytest.raises(CommandError, match="files_root '../..' may not contain '..'") as info:
        runevals("--queue", str(skill))

    assert info.value.returncode == 2
    assert not QueuedIteration.objects.exists()


def test_the_skill_is_locked_across_machines_until_its_campaign_goes_stale(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, celery_held: None, settings
) -> None:
    skill = make_skill(tmp_path)
    runevals("--queue", str(skill))
    first = Campaign.objects.get()

    for args in (["--queue"], []):  # another queued campaign, or a run here
        with pytest.raises(CommandError) as info:
            runevals(*args, str(skill))
        assert info.value.returncode == 2
        assert str(info.value).startswith(f"demo is locked by queued campaign #{first.pk} (")

    Campaign.objects.update(created_at=timezone.now() - timedelta(hours=2))
    settings.EVALSITE_QUEUE_STALE_AFTER = 3600
    runevals("--queue", str(skill))

    old, new = QueuedIteration.objects.order_by("pk")
    assert old.state == "abandoned" and old.error.startswith("abandoned: no run activity since")
    assert new.state == "running" and new.label == "iteration-2"


def test_resume_finishes_a_queued_campaign_without_replaying_its_finished_runs(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, celery_held: None
) -> None:
    skill = make_skill(tmp_path)
    runevals("--queue", str(skill))  # sent, and no worker took them
    first, errored, *_ = QueuedRun.objects.order_by("pk")
    execute.play_queued_run(first.pk)  # one worker played one run before the broker was lost
    QueuedRun.objects.filter(pk=errored.pk).update(state="errored", error="APIError: boom")
    calls = len(api.message_requests)

    from evalsite.celery import app

    app.conf.task_always_eager = True
    out = runevals("--queue", "--resume", "--wait", str(skill))

    assert "demo #1 (iteration-1)" in out and "4 runs (0 errored)" in out
    first.refresh_from_db()
    assert first.attempts == 1  # kept, not replayed
    # Three runs played: write-notes without the skill (2 agent calls, 1 judge) and
    # second-eval's two (2 agent calls each); write-notes with the skill is not replayed.
    assert len(api.message_requests) - calls == 3 + 2 + 2
    assert Campaign.objects.count() == 2 and QueuedIteration.objects.get().state == "imported"
    assert Iteration.objects.get().runs.count() == 4


def race(work: Callable[[], Any], workers: int = 6) -> list[Any]:
    """`work` in several threads at once (each its own connection), as workers would."""
    results: list[Any] = []
    start = threading.Barrier(workers)

    def worker() -> None:
        start.wait()
        try:
            while True:
                try:
                    results.append(work())
                    return
                except OperationalError as exc:
                    # The test database in memory has no busy timeout: wait as a file would.
                    if "locked" not in str(exc):
                        raise
                    time.sleep(0.01)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == workers
    return results


@pytest.mark.django_db(transaction=True)
def test_two_workers_finishing_the_last_runs_together_finalise_once(
    workspace: Path, celery_held: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    campaign = Campaign.objects.create(requested_by="test")
    queued = QueuedIteration.objects.create(
        campaign=campaign, skill_name="demo", label="iteration-1", plan={}
    )
    QueuedRun.objects.create(iteration=queued, eval_id="a", condition="x", run_index=1)
    QueuedRun.objects.update(state="done")
    finalised: list[str] = []
    monkeypatch.setattr(execute, "finalise", lambda iteration, me: finalised.append(me))

    def finish_last_run() -> None:
        with contextlib.suppress(execute.Deferred):  # the losers wait for the winner
            execute.maybe_finalise(queued.pk)

    race(finish_last_run)

    assert len(finalised) == 1


@pytest.mark.django_db(transaction=True)
def test_a_run_delivered_many_times_at_once_is_claimed_once(
    workspace: Path, celery_held: None
) -> None:
    campaign = Campaign.objects.create(requested_by="test")
    queued = QueuedIteration.objects.create(
        campaign=campaign, skill_name="demo", label="iteration-1", plan={}
    )
    run = QueuedRun.objects.create(iteration=queued, eval_id="a", condition="x", run_index=1)
    delivered = QueuedRun.objects.select_related("iteration__campaign")

    claims = race(lambda: execute._claim(delivered.get(pk=run.pk)))

    assert len([claim for claim in claims if claim]) == 1
    run.refresh_from_db()
    assert run.state == "running" and run.attempts == 1


def test_a_silent_workers_run_is_taken_over_and_its_late_result_not_recorded(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, celery_held: None, settings
) -> None:
    runevals("--queue", str(make_skill(tmp_path)))
    run = QueuedRun.objects.select_related("iteration__campaign").first()
    lost = execute._claim(run)
    assert execute._claim(run) is None  # its worker is alive: another delivery waits
    with pytest.raises(execute.Deferred):
        execute.play_queued_run(run.pk)

    silent = timezone.now() - timedelta(seconds=4 * settings.EVALSITE_QUEUE_HEARTBEAT)
    QueuedRun.objects.filter(pk=run.pk).update(heartbeat_at=silent)
    execute.play_queued_run(run.pk)  # taken over and played

    run.refresh_from_db()
    assert run.state == "done" and run.attempts == 2 and run.attempt != lost
    store = RunStore()
    assert store.files(run.attempt_key)  # the recorded attempt's files are kept


class ObjectStore(InMemoryStorage):
    """Storage as S3 behaves: no local paths (the finaliser downloads), no folders (exists()
    is false for a prefix; listing a missing one is empty)."""

    def exists(self, name: str) -> bool:
        return super().exists(name) and not self.listdir_or_none(name)

    def listdir_or_none(self, name: str) -> tuple | None:
        try:
            return super().listdir(name)
        except (FileNotFoundError, FileExistsError):  # (InMemoryStorage's "not a folder")
            return None

    def listdir(self, path: str) -> tuple[list[str], list[str]]:
        return self.listdir_or_none(path) or ([], [])


def test_on_an_object_store_the_iteration_is_put_together_locally_and_stored_whole(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, celery_here: None, settings
) -> None:
    settings.STORAGES = {
        **settings.STORAGES,
        "runs": {"BACKEND": "tests.grading.campaigns.test_workflow.ObjectStore"},
    }
    from django.core.files.storage import storages

    runevals("--queue", "--wait", str(make_skill(tmp_path)))

    store = RunStore(storages["runs"])
    files = store.files("demo/iteration-1")
    assert "benchmark.json" in files and "eval-second-eval/without_skill/run.json" in files
    iteration = Iteration.objects.get()
    assert iteration.source_path == str(workspace / "demo" / "iteration-1")
    assert iteration.runs.count() == 4


def test_a_worker_cleans_up_after_this_hosts_lost_workers(workspace: Path) -> None:
    import os
    import socket

    host = socket.gethostname()
    lost = workspace / ".worker" / f"{host}-{2**22 + 1}" / "7" / "runs"  # beyond pid_max
    alive = workspace / ".worker" / f"{host}-{os.getpid()}" / "7"
    elsewhere = workspace / ".worker" / f"other-host-{2**22 + 1}"
    for folder in (lost, alive, elsewhere):
        folder.mkdir(parents=True)

    worker.clean_lost_scratch()

    assert not lost.parent.parent.exists() and alive.is_dir() and elsewhere.is_dir()


def test_a_broker_that_refuses_the_runs_leaves_nothing_queued(
    tmp_path: Path, workspace: Path, celery_held: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kombu.exceptions import OperationalError as BrokerError

    from grading.campaigns import tasks

    def refuse(*args: object, **kwargs: object) -> None:
        raise BrokerError("Error 111 connecting to 127.0.0.1:1. Connection refused.")

    monkeypatch.setattr(tasks.play_run, "apply_async", refuse)

    with pytest.raises(CommandError) as info:
        runevals("--queue", str(make_skill(tmp_path)))

    assert info.value.returncode == 2
    assert str(info.value) == (
        "cannot send runs to the broker at CELERY_BROKER_URL (Error 111 connecting to "
        "127.0.0.1:1. Connection refused.): nothing was queued"
    )
    assert not Campaign.objects.exists() and not QueuedRun.objects.exists()
    assert not (tmp_path / "store" / "demo").exists()
    assert not (tmp_path / "store" / ".queue").exists()
