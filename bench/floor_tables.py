"""The floors' tables: the columns the importer fills, adapted to the schema as migrated.

The project's schema moves while the floors do not, so each table's columns are read from
the migrated database: a column the floor does not know but must fill (NOT NULL, no default)
gets a neutral constant and is reported, and one the table lost is left out.
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.floor_search import WEIGHTS, without_punctuation

COLUMNS = {
    "runs_skill": ("id", "name", "description", "notes", "created_at", "updated_at"),
    "runs_evalcase": (
        "id",
        "skill_id",
        "eval_id",
        "fingerprint",
        "origin",
        "dialect",
        "definition",
        "name",
        "prompt",
        "expected_output",
        "assertions",
        "skill_should_trigger",
        "tags",
        "weight",
        "created_at",
    ),
    "runs_iteration": (
        "id",
        "skill_id",
        "number",
        "label",
        "run_label",
        "source_key",
        "source_kind",
        "source_path",
        "mode",
        "baseline",
        "agent_model",
        "judge_model",
        "harness",
        "generated_at",
        "validity_warnings",
        "missing_gradings",
        "recorded_benchmark",
        "recorded_aggregates",
        "provenance",
        "skill_snapshot",
        "notes",
        "findings",
        "extra",
        "content_hash",
        "imported_at",
        "updated_at",
    ),
    "runs_condition": (
        "id",
        "iteration_id",
        "name",
        "role",
        "position",
        "loads_skill",
        "skill_path",
        "staged_skill_slug",
    ),
    "runs_run": (
        "id",
        "iteration_id",
        "condition_id",
        "eval_case_id",
        "eval_id",
        "run_index",
        "source_relpath",
        "status",
        "stop_reason",
        "prompt",
        "final_message",
        "conversation",
        "conversation_events",
        "tool_invocations",
        "artifacts",
        "total_tokens",
        "duration_ms",
        "timing_source",
        "skill_called",
        "content_hash",
    ),
    "runs_grading": (
        "id",
        "run_id",
        "format",
        "passed",
        "failed",
        "total",
        "pass_rate",
        "summary_computed",
        "meta_passed",
        "meta_failed",
        "meta_total",
        "skill_invoked",
        "has_meta_summary",
        "extra",
    ),
    "runs_assertionresult": (
        "id",
        "grading_id",
        "assertion_id",
        "is_meta",
        "position",
        "passed",
        "evidence",
        "confidence",
        "grader",
        "text",
    ),
    # Each run's search document (bench/floor_search.py).
    "search_searchdocument": (
        "run_id",
        "skill_id",
        "iteration_id",
        "condition",
        "outcome",
        "prompt",
        "final_message",
        "evidence",
        "notes",
        "conversation",
    ),
}


@dataclass(frozen=True)
class Column:
    name: str
    #: NOT NULL without a default: an INSERT must give it a value.
    required: bool
    #: A literal of the column's type (and JSON check) for a column the floor does not know.
    neutral: str


class Database:
    """The floor's connection: sqlite3 with evalsite's pragmas, or psycopg; one transaction."""

    def __init__(self, target: Path | str):
        self.postgres = str(target).startswith(("postgres://", "postgresql://"))
        self.param = "%s" if self.postgres else "?"  # the DB-API parameter marker
        if self.postgres:
            import psycopg

            self.conn: Any = psycopg.connect(str(target))
            # Django stores aware datetimes in UTC; the floor's naive UTC strings must agree.
            self.conn.execute("SET TIME ZONE 'UTC'")
            self.conn.commit()
        else:
            self.conn = sqlite3.connect(target, isolation_level=None)
            # evalsite's own pragmas (settings.py), so both databases do the same I/O.
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")

    def columns(self, table: str) -> list[Column]:
        """The table's columns as migrated, in order."""
        if self.postgres:
            rows = self.conn.execute(
                "SELECT column_name, is_nullable = 'NO' AND column_default IS NULL"
                " AND is_identity = 'NO', data_type FROM information_schema.columns"
                " WHERE table_name = %s AND table_schema = current_schema()"
                " ORDER BY ordinal_position",
                (table,),
            ).fetchall()
            return [Column(name, required, _pg_neutral(kind)) for name, required, kind in rows]
        ddl = self.conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()[0]
        # PRAGMA table_info rows: (cid, name, type, notnull, dflt_value, pk)
        info = self.conn.execute(f"PRAGMA table_info({table})").fetchall()
        return [
            Column(row[1], bool(row[3]) and row[4] is None, _sqlite_neutral(row, ddl))
            for row in info
        ]

    def begin(self) -> None:
        if not self.postgres:  # psycopg opens a transaction with the first statement
            self.conn.execute("BEGIN IMMEDIATE")

    def executemany(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> None:
        if self.postgres:
            with self.conn.cursor() as cursor:
                cursor.executemany(sql, list(rows))  # pipelined by psycopg 3
        else:
            self.conn.executemany(sql, rows)

    def commit_and_close(self) -> None:
        if self.postgres:
            self.conn.commit()
        else:
            self.conn.execute("COMMIT")
        self.conn.close()


class Table:
    """An INSERT for the floor's columns of one table, adapted to the table as migrated."""

    def __init__(self, db: Database, name: str):
        self.db = db
        info = db.columns(name)
        present = {column.name for column in info}
        known = COLUMNS[name]
        keep = [i for i, column in enumerate(known) if column in present]
        self.dropped = [column for column in known if column not in present]
        filled = [column for column in info if column.name not in known and column.required]
        self.filled = [column.name for column in filled]
        columns = [known[i] for i in keep] + self.filled
        values = [db.param] * len(keep) + [column.neutral for column in filled]
        self.sql = f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({', '.join(values)})"
        self.project: Callable[[Any], Any] | None = None
        if len(keep) != len(known):
            getter = operator.itemgetter(*keep)
            self.project = getter if len(keep) > 1 else lambda row: (getter(row),)

    def insert(self, rows: Iterable[tuple[Any, ...]]) -> None:
        if self.project is not None:
            rows = map(self.project, rows)
        self.db.executemany(self.sql, rows)


def _sqlite_neutral(row: tuple[Any, ...], ddl: str) -> str:
    """A SQL literal that satisfies a NOT NULL column's type and JSON check."""
    column, kind = row[1], (row[2] or "").lower()
    if f'JSON_VALID("{column}")' in ddl:
        return "'{}'"
    if any(word in kind for word in ("int", "bool", "real", "decimal", "numeric")):
        return "0"
    if "datetime" in kind or kind == "date":
        return "'1970-01-01 00:00:00'"
    return "''"


def _pg_neutral(kind: str) -> str:
    if kind in ("jsonb", "json"):
        return "'{}'"
    if kind == "boolean":
        return "false"
    if any(word in kind for word in ("int", "numeric", "double", "real")):
        return "0"
    if "timestamp" in kind or kind == "date":
        return "'1970-01-01 00:00:00+00'"
    return "''"


class SearchTable(Table):
    """search_searchdocument: on PostgreSQL each row's vector is computed as it is inserted."""

    def __init__(self, db: Database, name: str):
        super().__init__(db, name)
        self.text_positions = [COLUMNS[name].index(column) for column, _ in WEIGHTS]
        if db.postgres:
            vector = " || ".join(
                f"setweight(to_tsvector('simple', %s), '{weight}')" for _, weight in WEIGHTS
            )
            head, values = self.sql.rsplit(") VALUES (", 1)
            self.sql = f"{head}, vector) VALUES ({values[:-1]}, {vector})"

    def insert(self, rows: Iterable[tuple[Any, ...]]) -> None:
        if self.db.postgres:
            rows = [
                (*row, *(without_punctuation(row[i]) for i in self.text_positions)) for row in rows
            ]
        super().insert(rows)


def create_tables(db: Database) -> dict[str, Table]:
    return {
        name: (SearchTable if name == "search_searchdocument" else Table)(db, name)
        for name in COLUMNS
    }


def schema_notes(tables: dict[str, Table]) -> list[str]:
    """Columns the floor filled with constants or left out: the schema moved on."""
    notes = []
    for name, table in tables.items():
        notes += [f"{name}.{c}: unknown to the floor, set to a constant" for c in table.filled]
        notes += [f"{name}.{c}: no longer in the schema, left out" for c in table.dropped]
    return notes
