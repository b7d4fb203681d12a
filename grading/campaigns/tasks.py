"""The Celery tasks `runevals --queue` sends; their work is in execute.py.

Both are safe to deliver twice (late acknowledgement redelivers a lost worker's task, and
the sweep sends one again): a finished run or an imported iteration is left alone, a run
another worker is playing waits. Neither is tried forever: a malformed or unknown id is
dropped with a log line, and after MAX_RETRIES a delivery is dropped too, which loses
nothing, as the sweep (recovery.py) sends a run again if the worker holding it is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from celery import Task

from . import execute
from .celery_app import app

log = logging.getLogger(__name__)

#: Retries of one delivery: about 15 minutes of unexpected failures (see `backoff`), or of
#: deferring to the live worker that holds the run, 20 beats.
MAX_RETRIES = 20
#: The largest id a BigAutoField holds; a larger number names no row, and fails the query.
LARGEST_ID = 2**63 - 1


def queued_id(value: object) -> int | None:
    """`value` if it can be a queued row's id as runevals sends one (a JSON integer above
    zero), else None. A string of digits is refused too: the queue's senders send numbers,
    so anything else did not come from them."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= LARGEST_ID:
        return value
    return None


@app.task(bind=True, name="campaigns.play_run", max_retries=MAX_RETRIES)
def play_run(self: Task, run_id: object) -> None:
    """Play, record and grade one queued run; finalise its iteration if it was the last."""
    if (pk := queued_id(run_id)) is None:
        log.error("campaigns.play_run(%.100r) dropped: an id is a positive integer", run_id)
        return
    _try(self, f"queued run #{pk}", lambda: execute.play_queued_run(pk))


@app.task(bind=True, name="campaigns.finalise_iteration", max_retries=MAX_RETRIES)
def finalise_iteration(self: Task, iteration_id: object) -> None:
    """Finalise and import a queued iteration whose runs are all recorded (--resume, sweep)."""
    if (pk := queued_id(iteration_id)) is None:
        log.error(
            "campaigns.finalise_iteration(%.100r) dropped: an id is a positive integer",
            iteration_id,
        )
        return
    _try(self, f"queued iteration #{pk}", lambda: execute.finalise_queued_iteration(pk))


def _try(task: Task, what: str, work: Callable[[], None]) -> None:
    """`work`, retried later when deferred or failing, up to MAX_RETRIES times."""
    retries = task.request.retries
    try:
        work()
    except execute.Deferred as deferred:
        if retries < MAX_RETRIES:
            raise task.retry(countdown=deferred.countdown) from None
        log.warning(
            "%s: still held by a live worker after %d tries; this delivery is dropped "
            "(the sweep sends it again if that worker is lost)",
            what,
            retries + 1,
        )
    except Exception as exc:  # the database or the store is away: keep the run queued
        if retries < MAX_RETRIES:
            raise task.retry(exc=exc, countdown=backoff(retries)) from None
        log.error("%s: failed %d times; this delivery is dropped", what, retries + 1, exc_info=True)


def backoff(retries: int) -> float:
    """Seconds before trying again after an unexpected failure: 1, 2, 4… up to a minute."""
    return float(min(60, 2**retries))
