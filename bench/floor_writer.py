"""What both floors share: ids in order, an iteration's files and hashes, and its rows.

A floor writes the importer's rows with the least work, so the rows of runs, gradings and
results are plain tuples in the tables' column order (bench/floor_tables.py); the few rows
per iteration (the iteration, its conditions, eval cases) are built from named values.
"""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from bench.floor_tables import COLUMNS, Database, create_tables, schema_notes

ROLES = {
    "with_skill": "treatment",
    "new_skill": "treatment",
    "without_skill": "control",
    "old_skill": "control",
}


def json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def db_datetime(value: str | None) -> str | None:
    """An ISO timestamp as Django stores an aware datetime in SQLite (naive UTC)."""
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed.isoformat(sep=" ")


def read_files(folder: Path, *, skip: tuple[str, ...]) -> dict[str, bytes]:
    """Every file under an iteration folder, by POSIX relative path; folders whose names
    start with one of `skip` (an eval's env-* files) are left out, as the importer does."""
    files: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith(skip)]
        prefix = os.path.relpath(dirpath, folder).replace(os.sep, "/")
        prefix = "" if prefix == "." else prefix + "/"
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as handle:
                files[prefix + name] = handle.read()
    return files


def digests(
    files: dict[str, bytes], run_folder: Callable[[str], str | None]
) -> tuple[str, dict[str, str]]:
    """The iteration's content hash and each run folder's, as the importer computes them;
    `run_folder` names the run folder a path is in (None: in none)."""
    whole = hashlib.sha256()
    runs: dict[str, Any] = defaultdict(hashlib.sha256)
    for relpath in sorted(files):
        entry = relpath.encode() + b"\0" + hashlib.sha256(files[relpath]).digest()
        whole.update(entry)
        prefix = run_folder(relpath)
        if prefix is not None:
            runs[prefix].update(entry)
    return whole.hexdigest(), {prefix: h.hexdigest() for prefix, h in runs.items()}


@dataclass
class RunRows:
    """An iteration's runs and what hangs on them, inserted once all are read."""

    runs: list[tuple[Any, ...]] = field(default_factory=list)
    gradings: list[tuple[Any, ...]] = field(default_factory=list)
    results: list[tuple[Any, ...]] = field(default_factory=list)
    search: list[tuple[Any, ...]] = field(default_factory=list)


class FloorWriter:
    """A migrated database written in one transaction, with ids handed out in order."""

    def __init__(self, target: Path | str):
        self.db = Database(target)
        self.tables = create_tables(self.db)
        self.ids: dict[str, int] = defaultdict(int)
        self.skills: dict[str, int] = {}
        self.now = datetime.now(UTC).replace(tzinfo=None).isoformat(sep=" ")

    def schema_notes(self) -> list[str]:
        return schema_notes(self.tables)

    def next_id(self, table: str) -> int:
        self.ids[table] += 1
        return self.ids[table]

    def insert_one(self, table: str, **values: Any) -> None:
        """One row from named values, in the table's column order."""
        self.tables[table].insert([tuple(values[column] for column in COLUMNS[table])])

    def skill(self, name: str) -> int:
        if name not in self.skills:
            self.skills[name] = skill_id = self.next_id("skill")
            self.insert_one(
                "runs_skill",
                id=skill_id,
                name=name,
                description="",
                notes="",
                created_at=self.now,
                updated_at=self.now,
            )
        return self.skills[name]

    def iteration(self, **values: Any) -> int:
        """An iteration row from the values the layouts differ in; its id."""
        iteration_id = self.next_id("iteration")
        self.insert_one(
            "runs_iteration",
            id=iteration_id,
            missing_gradings=0,
            recorded_aggregates=None,
            notes="",
            findings="{}",
            imported_at=self.now,
            updated_at=self.now,
            **values,
        )
        return iteration_id

    def conditions(
        self, iteration_id: int, conditions: list[tuple[str, bool, str, str]]
    ) -> dict[str, int]:
        """(name, loads_skill, skill_path, staged_skill_slug) in order; their ids by name."""
        ids = {}
        rows = []
        for position, (name, loads_skill, skill_path, slug) in enumerate(conditions):
            ids[name] = self.next_id("condition")
            role = ROLES.get(name, "other")
            rows.append(
                (ids[name], iteration_id, name, role, position, loads_skill, skill_path, slug)
            )
        self.tables["runs_condition"].insert(rows)
        return ids

    def eval_case(self, **values: Any) -> int:
        """An eval case row from the values the layouts differ in; its id."""
        case_id = self.next_id("evalcase")
        self.insert_one(
            "runs_evalcase",
            id=case_id,
            expected_output="",
            skill_should_trigger=True,
            tags="[]",
            weight=1.0,
            created_at=self.now,
            **values,
        )
        return case_id

    def insert_runs(self, rows: RunRows) -> None:
        self.tables["runs_run"].insert(rows.runs)
        self.tables["runs_grading"].insert(rows.gradings)
        self.tables["runs_assertionresult"].insert(rows.results)
        self.tables["search_searchdocument"].insert(rows.search)
