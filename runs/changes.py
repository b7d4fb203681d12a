"""The one duty of every write to what the dashboard shows: end it with `changed()`.

Search documents are built from runs, and cached page regions are keyed on the generation
(runs/generation.py): a write that updated one and not the other would leave search or the
pages showing what was there before. So the import, reviews, regrade and the admin each end
their transaction with `changed(...)`, naming what they wrote, and it does both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection

from .models import AssertionResult, Generation, Grading, Iteration, Run
from .search.index import NewRun, Written, index_iteration, index_runs
from .search.pending import index_imported

#: An import of at least this many runs refreshes PostgreSQL's statistics of the tables it
#: filled before it commits (see `refresh_statistics`).
ANALYZE_AFTER_RUNS = 100


@dataclass(frozen=True)
class Imported:
    """An iteration the import has just written, `run_count` runs; `in_memory` holds all of
    them as written when the iteration is new, so indexing need not read them back."""

    iteration: Iteration
    run_count: int
    in_memory: tuple[list[NewRun], dict[int, Written]] | None = None


def changed(
    *,
    runs: Iterable[int] = (),
    iterations: Iterable[Iteration | int] = (),
    imported: Imported | None = None,
) -> None:
    """Call last in the transaction of a write: the search documents of `runs`, of every run
    of `iterations` and of the `imported` iteration are written again, and a new generation
    starts, committed with the data, so no cached page region shows the old data."""
    if ids := list(runs):
        index_runs(ids)
    for iteration in iterations:
        index_iteration(iteration)
    if imported is not None:
        index_imported(imported.iteration, imported.run_count, imported.in_memory)
        if imported.run_count >= ANALYZE_AFTER_RUNS:
            refresh_statistics()
    Generation.objects.bump()


def refresh_statistics() -> None:
    """ANALYZE the runs, gradings and assertion results on PostgreSQL, in the import's
    transaction (whose own rows ANALYZE counts).

    Until autovacuum gets to them, a fresh database's tables are planned as empty: the
    planner then joins a large first import's results to its gradings and runs by nested
    loops with no index condition, and a page's assertion counts took minutes on 3,000
    results (seen in CI). SQLite plans by its indexes and needs nothing."""
    if connection.vendor != "postgresql":
        return
    tables = ", ".join(
        connection.ops.quote_name(model._meta.db_table) for model in (Run, Grading, AssertionResult)
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {tables}")
