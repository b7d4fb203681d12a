"""The one duty of every write to what the dashboard shows: end it with `changed()`.

Search documents are built from runs, and cached page regions are keyed on the generation
(runs/generation.py): a write that updated one and not the other would leave search or the
pages showing what was there before. So the import, reviews, regrade and the admin each end
their transaction with `changed(...)`, naming what they wrote, and it does both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .models import Generation, Iteration
from .search.index import NewRun, Written, index_iteration, index_runs
from .search.pending import index_imported


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
    Generation.objects.bump()
