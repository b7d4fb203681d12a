"""Indexing a large iteration just after its import commits, without losing track of it.

A small import indexes its runs in its own transaction (`index.index_written`). A large one
(DEFER_FROM_RUNS runs or more) would keep its pages from showing for the seconds the full
text index takes: instead it marks the iteration pending (a `PendingIndex` row, in the
import's transaction) and indexes it once that transaction has committed. The index and
the marker's removal are one transaction, so the marker is gone exactly when the
iteration's documents are complete. Until then search names the iteration as still being
indexed. Should the process die on the way, the marker stays: the next large import, or
`manage.py searchindex --pending`, completes it.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import connection, connections, transaction
from django.db.models import Q
from django.utils import timezone

from runs.models import Iteration, Run

from .index import Written, index_iteration, index_written
from .models import PendingIndex

#: From this many runs written, an iteration is indexed after its import commits.
DEFER_FROM_RUNS = 1000
#: A claim older than this belonged to a process that died: another may take the work on.
CLAIM_EXPIRES = timedelta(minutes=15)


def index_imported(
    iteration: Iteration, run_count: int, written: tuple[list[Run], dict[int, Written]] | None
) -> None:
    """Index an iteration the import has just written (`written`: its runs in memory, when
    all are new; else read back): in the import's transaction when it is small, just after
    the commit from DEFER_FROM_RUNS runs, so a large iteration's pages show first."""
    if run_count >= DEFER_FROM_RUNS:
        defer_iteration(iteration, written)
    elif written is not None:
        index_written(iteration, *written)
    else:
        index_iteration(iteration)


def defer_iteration(
    iteration: Iteration, written: tuple[list[Run], dict[int, Written]] | None = None
) -> None:
    """In the import's transaction: mark the iteration pending, and index it (from the runs
    the import has in memory, `written`, else read back) once the transaction commits."""
    PendingIndex.objects.update_or_create(
        iteration=iteration,
        defaults={"skill_id": iteration.skill_id, "since": timezone.now(), "claimed_at": None},
    )
    if written is None:
        build = functools.partial(index_iteration, iteration.pk)
    else:
        build = functools.partial(index_written, iteration, *written)
    checkpoint = _defer_wal_checkpoint()
    # robust: the import's rows are committed whatever happens here; a failure is logged and
    # the marker left for `searchindex --pending`.

    def index_after_commit() -> None:  # a function: Django names it when logging a failure
        _after_commit(iteration.pk, build, checkpoint)

    transaction.on_commit(index_after_commit, robust=True)


def _after_commit(iteration_id: int, build: Callable[[], int], checkpoint: int | None) -> None:
    try:
        _complete(iteration_id, build)
        complete_pending()  # what an earlier process left unfinished
    finally:
        this = connections[connection.alias]
        if checkpoint is not None and _AUTOCHECKPOINT.pop(this, None) is not None:
            with connection.cursor() as cursor:
                if not connection.in_atomic_block:  # (a test's transaction, say)
                    cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
                cursor.execute(f"PRAGMA wal_autocheckpoint = {int(checkpoint)}")


def complete_pending() -> int:
    """Index every pending iteration no live process is indexing; how many it completed."""
    done = 0
    for iteration_id in PendingIndex.objects.order_by("since").values_list("pk", flat=True):
        done += _complete(iteration_id, functools.partial(index_iteration, iteration_id))
    return done


def _complete(iteration_id: int, build: Callable[[], int]) -> bool:
    """Claim the iteration's marker, build its documents and drop the marker in one
    transaction; False when another process holds the claim (or nothing is pending)."""
    now = timezone.now()
    unclaimed = Q(claimed_at__isnull=True) | Q(claimed_at__lt=now - CLAIM_EXPIRES)
    if not PendingIndex.objects.filter(unclaimed, pk=iteration_id).update(claimed_at=now):
        return False
    try:
        with transaction.atomic():
            build()
            PendingIndex.objects.filter(pk=iteration_id).delete()
    except BaseException:
        PendingIndex.objects.filter(pk=iteration_id, claimed_at=now).update(claimed_at=None)
        raise
    return True


def still_indexing(*, skill_id: int | None = None, number: int | None = None) -> list[str]:
    """The iterations (as "skill #n") whose runs are not all searchable yet, oldest first."""
    pending = PendingIndex.objects.all()
    if skill_id is not None:
        pending = pending.filter(skill_id=skill_id)
    if number is not None:
        pending = pending.filter(iteration__number=number)
    rows = pending.order_by("since").values_list("iteration__skill__name", "iteration__number")
    return [f"{name} #{n}" for name, n in rows]


def _defer_wal_checkpoint() -> int | None:
    """SQLite: keep the commit from checkpointing; the setting it had, to restore after.

    By default the commit that leaves the write-ahead log over 1,000 pages copies the log
    into the database file before it returns: 0.6 s of the bench's 6,000-run commit. Readers
    read the log as well, so that copy can wait until the index is built, like the index.
    Should the import roll back instead, the connection keeps the setting until the next
    deferred iteration's index restores it, or the connection closes; other connections'
    commits still checkpoint.
    """
    if connection.vendor != "sqlite":
        return None
    this = connections[connection.alias]  # this thread's connection, not the proxy
    if this not in _AUTOCHECKPOINT:  # not already off by an earlier deferral of ours
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_autocheckpoint")
            (_AUTOCHECKPOINT[this],) = cursor.fetchone()
            cursor.execute("PRAGMA wal_autocheckpoint = 0")
    return _AUTOCHECKPOINT[this]


#: The autocheckpoint setting of each connection this module turned off, until restored.
_AUTOCHECKPOINT: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
