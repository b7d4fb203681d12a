"""The Celery tasks' own rules: what a delivery they cannot act on becomes (dropped, with a
log line), and how long one that fails or waits is tried again (not forever)."""

from __future__ import annotations

import logging

import pytest
from django.db import OperationalError

from grading.campaigns import execute, tasks

MALFORMED = ["12", True, 0, -3, 1.0, None, 2**63, [1], {"id": 1}]


@pytest.fixture
def played(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ids the tasks' bodies were called with (none plays anything)."""
    calls: list[int] = []
    monkeypatch.setattr(execute, "play_queued_run", calls.append)
    monkeypatch.setattr(execute, "finalise_queued_iteration", calls.append)
    return calls


@pytest.mark.parametrize("task", [tasks.play_run, tasks.finalise_iteration], ids=lambda t: t.name)
@pytest.mark.parametrize("value", MALFORMED, ids=repr)
def test_a_malformed_id_is_dropped_with_one_log_line_and_not_retried(
    task, value: object, played: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="grading.campaigns"):
        result = task.apply(args=(value,))

    assert result.state == "SUCCESS" and not played
    (line,) = [record for record in caplog.records if record.name.startswith("grading")]
    assert line.levelno == logging.ERROR
    assert line.getMessage() == f"{task.name}({value!r}) dropped: an id is a positive integer"


def test_a_well_formed_id_reaches_the_tasks_body(played: list[int]) -> None:
    tasks.play_run.apply(args=(7,))
    tasks.finalise_iteration.apply(args=(2**63 - 1,))

    assert played == [7, 2**63 - 1]


@pytest.mark.django_db
def test_a_run_id_that_names_no_run_is_dropped_with_a_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="grading.campaigns"):
        run = tasks.play_run.apply(args=(424242,))
        iteration = tasks.finalise_iteration.apply(args=(424242,))

    assert run.state == iteration.state == "SUCCESS"
    assert [record.getMessage() for record in caplog.records] == [
        "queued run #424242 does not exist (its campaign was deleted?): dropped",
        "queued iteration #424242 does not exist (its campaign was deleted?): dropped",
    ]


def test_an_unexpected_failure_is_tried_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[int] = []

    def database_away(pk: int) -> None:
        calls.append(pk)
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(execute, "play_queued_run", database_away)

    with caplog.at_level(logging.ERROR, logger="grading.campaigns"):
        result = tasks.play_run.apply(args=(5,))

    assert len(calls) == tasks.MAX_RETRIES + 1 and result.state == "SUCCESS"
    (line,) = caplog.records
    assert line.getMessage() == "queued run #5: failed 21 times; this delivery is dropped"
    assert "server closed the connection" in caplog.text  # its traceback, to act on


def test_a_run_held_by_a_live_worker_is_waited_for_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[int] = []

    def held(pk: int) -> None:
        calls.append(pk)
        raise execute.Deferred(0)

    monkeypatch.setattr(execute, "play_queued_run", held)

    with caplog.at_level(logging.WARNING, logger="grading.campaigns"):
        result = tasks.play_run.apply(args=(5,))

    assert len(calls) == tasks.MAX_RETRIES + 1 and result.state == "SUCCESS"
    (line,) = caplog.records
    assert line.getMessage().startswith(
        "queued run #5: still held by a live worker after 21 tries; this delivery is dropped"
    )


def test_a_retry_waits_longer_each_time_up_to_a_minute() -> None:
    assert [tasks.backoff(n) for n in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]
