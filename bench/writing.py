"""How both generators write: files counted as they go, units of work in forked processes.

Each unit (a skill, a share of the evals) seeds its own RNGs, so the tree is the same
whatever the number of processes; the counts of the units add up to the tree's.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

import orjson

DUMP = orjson.OPT_INDENT_2
Unit = TypeVar("Unit")
Result = TypeVar("Result")


@dataclass
class Counts:
    """What was written: records, files and bytes (by kind of file, for the per-run sizes)."""

    skills: int = 0
    iterations: int = 0
    runs: int = 0
    assertion_results: int = 0
    meta_results: int = 0
    files: int = 0
    bytes: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)

    def add_file(self, kind: str, size: int) -> None:
        self.files += 1
        self.bytes += size
        self.by_kind[kind] = self.by_kind.get(kind, 0) + size

    def merge(self, other: Counts) -> None:
        """Add another unit's counts to these."""
        for name in (f.name for f in fields(self) if f.name != "by_kind"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for kind, size in other.by_kind.items():
            self.by_kind[kind] = self.by_kind.get(kind, 0) + size

    def summary(self) -> dict[str, Any]:
        """The counts as the generators return and the benches print them."""
        return {
            "skills": self.skills,
            "iterations": self.iterations,
            "runs": self.runs,
            "assertion_results": self.assertion_results,
            "meta_results": self.meta_results,
            "files": self.files,
            "bytes": self.bytes,
            "bytes_by_kind": dict(sorted(self.by_kind.items())),
        }


def write_file(path: Path, data: bytes, kind: str, counts: Counts) -> None:
    path.write_bytes(data)
    counts.add_file(kind, len(data))


def write_json(path: Path, doc: Any, kind: str, counts: Counts) -> None:
    """`doc` as indented JSON, as the tools the generators imitate write it."""
    write_file(path, orjson.dumps(doc, option=DUMP), kind, counts)


def in_processes(
    job: Callable[[Unit], Result], units: Iterable[Unit], workers: int
) -> list[Result]:
    """`job` of every unit, in `workers` forked processes (in this one if `workers` is 1)."""
    if workers <= 1:
        return [job(unit) for unit in units]
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return list(pool.map(job, units))
