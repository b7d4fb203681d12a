"""The Celery tasks `runevals --queue` sends; their work is in execute.py.

Both are safe to deliver twice (late acknowledgement redelivers a lost worker's task): a
finished run or an imported iteration is left alone, a run another worker is playing waits.
"""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_init, worker_ready
from django.conf import settings

from . import execute


@shared_task(bind=True, name="campaigns.play_run", max_retries=None)
def play_run(self, run_id: int) -> None:
    """Play, record and grade one queued run; finalise its iteration if it was the last."""
    try:
        execute.play_queued_run(run_id)
    except execute.Deferred as deferred:
        raise self.retry(countdown=deferred.countdown) from None
    except Exception as exc:  # the database or the store is away: keep the run queued
        raise self.retry(exc=exc, countdown=backoff(self.request.retries)) from None


@shared_task(bind=True, name="campaigns.finalise_iteration", max_retries=None)
def finalise_iteration(self, iteration_id: int) -> None:
    """Finalise and import a queued iteration whose runs are all recorded (--resume)."""
    try:
        execute.maybe_finalise(iteration_id)
    except execute.Deferred as deferred:
        raise self.retry(countdown=deferred.countdown) from None
    except Exception as exc:
        raise self.retry(exc=exc, countdown=backoff(self.request.retries)) from None


def backoff(retries: int) -> float:
    """Seconds before trying again after an unexpected failure: 1, 2, 4… up to a minute."""
    return float(min(60, 2**retries))


@worker_ready.connect
def clean_up_after_lost_workers(**kwargs: object) -> None:
    execute.clean_lost_scratch()


@worker_init.connect
def refuse_to_start_without_a_broker(**kwargs: object) -> None:
    """Without CELERY_BROKER_URL Celery would try a RabbitMQ on localhost, forever."""
    if not settings.CELERY_BROKER_URL:
        raise SystemExit(
            "CELERY_BROKER_URL is not set: the worker reads runevals --queue's runs from "
            "Redis (e.g. CELERY_BROKER_URL=redis://127.0.0.1:6379/1 in .env)"
        )
