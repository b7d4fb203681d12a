"""The sweep: a lost worker's run is sent again within minutes, whatever the broker does.

Late acknowledgement alone would leave a run whose whole worker was lost (`kill -9`, a
machine gone) unplayed until the broker's visibility timeout (hours). So whoever is alive —
each worker, from a thread, and `runevals --queue --wait` while it follows its campaign —
sweeps every EVALSITE_QUEUE_HEARTBEAT seconds: a run whose worker missed three beats gets
its task sent once more (as does a finalisation no live worker is doing), and the worker
it reaches takes it over by the usual claim. Sending is decided by a conditional update of
`sent_at`, so two sweeps at once send it once, and a copy too many is harmless: the claim,
not the message, decides who plays a run, and a finished run is left alone.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime

from celery import Task
from django.conf import settings
from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from . import tasks
from .models import Campaign, QueuedIteration, QueuedRun

log = logging.getLogger(__name__)


@dataclass
class Resent:
    """The runs and iterations whose task one sweep sent again (their ids)."""

    runs: list[int] = field(default_factory=list)
    iterations: list[int] = field(default_factory=list)


def resend_lost(*, campaign: Campaign | None = None) -> Resent:
    """Send again the task of every lost run and unfinalised iteration (of `campaign`)."""
    now = timezone.now()
    resent = Resent()
    runs = QueuedRun.objects.lost(now).select_related("iteration")
    iterations = QueuedIteration.objects.unfinalised(now)
    if campaign is not None:
        runs = runs.filter(iteration__campaign=campaign)
        iterations = iterations.filter(campaign=campaign)
    for run in runs:
        # Claimed by a compare-and-set on the row's own columns, as read: of two sweeps, one
        # sends. (A condition through a join would move into a subquery, which PostgreSQL
        # does not re-check after waiting for the other sweep's row lock.)
        claim = {"sent_at": run.sent_at, "state": run.state, "heartbeat_at": run.heartbeat_at}
        if QueuedRun.objects.filter(pk=run.pk, **claim).update(sent_at=now):
            _send(tasks.play_run, run.pk, QueuedRun.objects.filter(pk=run.pk), run.sent_at)
            log.warning("sent %s again: %s", run, _why(run))
            resent.runs.append(run.pk)
    for iteration in iterations:
        claim = {"sent_at": iteration.sent_at, "state": iteration.state}
        if QueuedIteration.objects.filter(pk=iteration.pk, **claim).update(sent_at=now):
            rows = QueuedIteration.objects.filter(pk=iteration.pk)
            _send(tasks.finalise_iteration, iteration.pk, rows, iteration.sent_at)
            log.warning("sent the finalisation of %s again: nobody alive is doing it", iteration)
            resent.iterations.append(iteration.pk)
    return resent


def _send(task: Task, pk: int, rows: QuerySet, sent_at: datetime | None) -> None:
    """Send the task; if the broker refuses it, the next sweep tries again."""
    try:
        task.apply_async((pk,), retry=False)
    except Exception:  # kombu raises its transports' own errors
        rows.update(sent_at=sent_at)
        raise


def _why(run: QueuedRun) -> str:
    if run.state == QueuedRun.State.RUNNING:
        return f"its worker ({run.worker}) has been silent since {run.heartbeat_at:%H:%M:%S} UTC"
    return f"still pending since {run.sent_at:%Y-%m-%d %H:%M} UTC: the broker may have lost it"


def sweep(*, campaign: Campaign | None = None) -> Resent | None:
    """resend_lost, telling rather than raising a failure: the next sweep may get through."""
    try:
        return resend_lost(campaign=campaign)
    except Exception:  # the database or the broker is away, for now
        log.warning("the sweep for lost runs failed; the next one may get through", exc_info=True)
        return None


def start_sweeping() -> threading.Event:
    """Sweep from a thread of this process every EVALSITE_QUEUE_HEARTBEAT seconds, until
    the returned event is set (or the process ends)."""
    stop = threading.Event()

    def loop() -> None:
        while True:
            try:
                sweep()
            finally:
                # No connection kept between sweeps: a prefork worker forks its pool
                # processes from this process, and a child must not inherit one.
                connection.close()
            if stop.wait(settings.EVALSITE_QUEUE_HEARTBEAT):
                return

    threading.Thread(target=loop, name="evalsite-sweep", daemon=True).start()
    return stop
