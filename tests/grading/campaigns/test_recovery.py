"""The sweep: a run (or finalisation) whose worker is lost is sent again once, soon, by
whoever is alive; one whose worker is alive, or that is finished, is left alone."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from grading.campaigns import execute, recovery, tasks, workflow
from grading.campaigns.models import Campaign, QueuedIteration, QueuedRun
from tests.fakeapi import FakeAnthropic
from tests.grading.campaigns.test_workflow import race
from tests.grading.test_runevals import make_skill

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The tasks sent, as (name, id): the broker is not needed to see what a sweep does."""
    sent: list[tuple[str, int]] = []
    for task in (tasks.play_run, tasks.finalise_iteration):
        monkeypatch.setattr(
            task, "apply_async", lambda args, name=task.name, **kw: sent.append((name, *args))
        )
    return sent


def beats(n: float) -> datetime:
    """The moment n heartbeats ago."""
    from django.conf import settings

    return timezone.now() - timedelta(seconds=n * settings.EVALSITE_QUEUE_HEARTBEAT)


def iteration(state: str = "running", **fields: object) -> QueuedIteration:
    campaign = Campaign.objects.create(requested_by="test")
    return QueuedIteration.objects.create(
        campaign=campaign, skill_name=f"skill-{campaign.pk}", label="iteration-1", plan={},
        state=state, **fields,
    )  # fmt: skip


def run(of: QueuedIteration, state: str, index: int = 1, **fields: object) -> QueuedRun:
    return QueuedRun.objects.create(
        iteration=of, eval_id="a", condition="x", run_index=index, state=state, **fields
    )


def test_a_run_whose_worker_went_silent_is_sent_again_once(
    sent: list, caplog: pytest.LogCaptureFixture
) -> None:
    lost = run(iteration(), "running", worker="box pid 9", sent_at=beats(10), heartbeat_at=beats(4))

    with caplog.at_level(logging.WARNING, logger="grading.campaigns"):
        first = recovery.resend_lost()
    second = recovery.resend_lost()

    assert first.runs == [lost.pk] and not second.runs
    assert sent == [("campaigns.play_run", lost.pk)]
    assert caplog.messages == [
        f"sent {lost} again: its worker (box pid 9) has been silent since "
        f"{lost.heartbeat_at:%H:%M:%S} UTC"
    ]


def test_a_run_taken_over_and_lost_again_is_sent_again(sent: list) -> None:
    lost = run(iteration(), "running", sent_at=beats(10), heartbeat_at=beats(4))
    recovery.resend_lost()
    # Later: claimed by the worker the sweep reached, which is alive, then lost in its turn.
    QueuedRun.objects.filter(pk=lost.pk).update(sent_at=beats(8), heartbeat_at=beats(1))
    assert not recovery.resend_lost().runs
    QueuedRun.objects.filter(pk=lost.pk).update(heartbeat_at=beats(4))

    assert recovery.resend_lost().runs == [lost.pk]
    assert sent == [("campaigns.play_run", lost.pk)] * 2


def test_a_run_whose_worker_is_alive_is_not_sent_again(sent: list) -> None:
    queued = iteration()
    run(queued, "running", sent_at=beats(100), heartbeat_at=beats(2))
    run(queued, "pending", index=2, sent_at=beats(100))  # in the broker, behind others

    assert recovery.resend_lost() == recovery.Resent() and sent == []


@pytest.mark.parametrize("state", ["done", "errored"])
def test_a_finished_run_is_not_sent_again(state: str, sent: list) -> None:
    queued = iteration()
    run(queued, state, sent_at=beats(100), heartbeat_at=beats(50), finished_at=timezone.now())

    assert not recovery.resend_lost().runs and sent == []


def test_a_run_of_an_iteration_no_longer_running_is_not_sent_again(sent: list) -> None:
    run(iteration("abandoned"), "running", sent_at=beats(10), heartbeat_at=beats(4))

    assert not recovery.resend_lost().runs and sent == []


def test_a_pending_run_is_sent_again_only_once_the_broker_may_have_lost_it(
    sent: list, settings
) -> None:
    settings.EVALSITE_QUEUE_VISIBILITY_TIMEOUT = 3600
    queued = iteration()
    waiting = run(queued, "pending", sent_at=timezone.now() - timedelta(minutes=59))
    forgotten = run(queued, "pending", index=2, sent_at=timezone.now() - timedelta(minutes=61))

    assert recovery.resend_lost().runs == [forgotten.pk]
    assert recovery.resend_lost().runs == []
    assert ("campaigns.play_run", waiting.pk) not in sent


def test_a_finalisation_whose_worker_went_silent_is_sent_again_once(sent: list) -> None:
    queued = iteration("finalising", finaliser="box pid 9", finalising_at=beats(4))
    run(queued, "done", finished_at=beats(6))

    assert recovery.resend_lost().iterations == [queued.pk]
    assert recovery.resend_lost().iterations == []
    assert sent == [("campaigns.finalise_iteration", queued.pk)]


def test_an_iteration_recorded_but_never_finalised_is_sent_once(sent: list) -> None:
    stuck = iteration()
    run(stuck, "done", finished_at=beats(5))
    run(stuck, "errored", index=2, finished_at=beats(4))
    just_recorded = iteration()
    run(just_recorded, "done", finished_at=beats(1))  # its worker is finalising it now
    unfinished = iteration()
    run(unfinished, "done", finished_at=beats(5))
    run(unfinished, "running", index=2, heartbeat_at=beats(1))

    assert recovery.resend_lost().iterations == [stuck.pk]
    assert recovery.resend_lost().iterations == []
    assert sent == [("campaigns.finalise_iteration", stuck.pk)]


def test_wait_sweeps_only_its_own_campaign(sent: list) -> None:
    mine, theirs = iteration(), iteration()
    lost = run(mine, "running", sent_at=beats(10), heartbeat_at=beats(4))
    run(theirs, "running", sent_at=beats(10), heartbeat_at=beats(4))

    assert recovery.resend_lost(campaign=mine.campaign).runs == [lost.pk]
    assert sent == [("campaigns.play_run", lost.pk)]


@pytest.mark.django_db(transaction=True)
def test_sweeps_at_once_send_a_lost_run_once(sent: list) -> None:
    lost = run(iteration(), "running", sent_at=beats(10), heartbeat_at=beats(4))

    swept = race(recovery.resend_lost)

    assert [resent.runs for resent in swept if resent.runs] == [[lost.pk]]
    assert sent == [("campaigns.play_run", lost.pk)]


def test_a_run_the_broker_refuses_is_left_for_the_next_sweep(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    lost = run(iteration(), "running", sent_at=beats(10), heartbeat_at=beats(4))

    def refuse(*args: object, **kwargs: object) -> None:
        raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.play_run, "apply_async", refuse)
    with caplog.at_level(logging.WARNING, logger="grading.campaigns"):
        assert recovery.sweep() is None
    assert "the sweep for lost runs failed" in caplog.text

    monkeypatch.undo()
    resent: list[int] = []
    monkeypatch.setattr(tasks.play_run, "apply_async", lambda args, **kw: resent.append(*args))
    assert recovery.resend_lost().runs == [lost.pk] and resent == [lost.pk]


def test_a_worker_sweeps_from_a_thread_every_heartbeat_until_stopped(
    monkeypatch: pytest.MonkeyPatch, settings
) -> None:
    settings.EVALSITE_QUEUE_HEARTBEAT = 0.05
    swept: list[float] = []
    monkeypatch.setattr(recovery, "sweep", lambda: swept.append(time.monotonic()))

    stop = recovery.start_sweeping()
    deadline = time.monotonic() + 10
    while len(swept) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    time.sleep(0.2)
    stopped_at = len(swept)
    time.sleep(0.2)

    assert 3 <= stopped_at == len(swept)
    assert all(later - earlier >= 0.05 for earlier, later in zip(swept, swept[1:], strict=False))


def test_wait_sends_a_lost_workers_run_again_and_the_campaign_finishes(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, celery_held: None, settings
) -> None:
    settings.EVALSITE_QUEUE_STALE_AFTER = 10  # (so that a sweep sending nothing fails the test)
    call_command("runevals", "--harness", "messages", "--queue", str(make_skill(tmp_path)))
    last, *others = QueuedRun.objects.order_by("-pk")
    for played in others:
        execute.play_queued_run(played.pk)
    lost = execute._claim(QueuedRun.objects.select_related("iteration__campaign").get(pk=last.pk))
    # Sent, claimed and signalled for a while; then its worker was lost.
    QueuedRun.objects.filter(pk=last.pk).update(sent_at=beats(10), heartbeat_at=beats(4))

    from evalsite.celery import app

    app.conf.task_always_eager = True  # what --wait sends is played here, as a worker would
    result = workflow.wait(Campaign.objects.get(), progress=lambda *a: None, poll=0.01)

    assert result.reports[0]["runs"] == 4
    last.refresh_from_db()
    assert last.state == "done" and last.attempts == 2 and last.attempt != lost
    assert QueuedIteration.objects.get().state == "imported"
