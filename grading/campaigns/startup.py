"""What a Celery worker does as it starts: refuse to run without a broker, remove what its
lost predecessors on this host left behind, and start sweeping for lost workers' runs.

Imported by the worker only (celery_app.py's `include`): a process that merely sends
tasks neither cleans up nor sweeps.
"""

from __future__ import annotations

from celery.signals import worker_init, worker_ready
from django.conf import settings

from . import recovery
from .worker import clean_lost_scratch


@worker_ready.connect
def clean_up_after_lost_workers(**kwargs: object) -> None:
    clean_lost_scratch()
    recovery.start_sweeping()


@worker_init.connect
def refuse_to_start_without_a_broker(**kwargs: object) -> None:
    """Without CELERY_BROKER_URL Celery would try a RabbitMQ on localhost, forever."""
    if not settings.CELERY_BROKER_URL:
        raise SystemExit(
            "CELERY_BROKER_URL is not set: the worker reads runevals --queue's runs from "
            "Redis (e.g. CELERY_BROKER_URL=redis://127.0.0.1:6379/1 in .env)"
        )
