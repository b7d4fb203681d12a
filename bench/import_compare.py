"""Whether the importer and the floor wrote the same rows: counts, then column contents.

The floor is only a floor if it does the same work, so the import bench checks its rows
against the importer's: every table's row count, and (with --compare) every content column
as a multiset of values, ids, foreign keys and clocks aside.
"""

from __future__ import annotations

from collections import Counter
from contextlib import suppress
from typing import Any

import orjson

from bench.databases import query
from bench.floor_tables import COLUMNS

TABLES = tuple(COLUMNS)
#: Columns that differ between two correct imports: ids, foreign keys, clocks.
NOT_CONTENT = {
    "id",
    "skill_id",
    "iteration_id",
    "condition_id",
    "eval_case_id",
    "run_id",
    "grading_id",
    "created_at",
    "updated_at",
    "imported_at",
}


def row_counts(url: str) -> dict[str, int]:
    return {t: query(url, f"SELECT count(*) FROM {t}")[0][0] for t in TABLES}


def _canonical(value: Any) -> bytes:
    """A value as comparable bytes: JSON text parsed (SQLite stores it as text, formatted
    by whoever wrote it), floats as they print, everything else through orjson."""
    if isinstance(value, str) and value[:1] in "[{":
        with suppress(orjson.JSONDecodeError):
            value = orjson.loads(value)
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)


def _present(url: str, table: str) -> set[str]:
    """The columns `table` has as migrated."""
    if url.startswith("sqlite:"):
        return {row[1] for row in query(url, f"PRAGMA table_info({table})")}
    sql = f"SELECT column_name FROM information_schema.columns WHERE table_name = '{table}'"
    return {row[0] for row in query(url, sql)}


def _tallies(url: str, sql: str, width: int) -> list[Counter[bytes]]:
    per_column: list[Counter[bytes]] = [Counter() for _ in range(width)]
    for row in query(url, sql):
        for tally, value in zip(per_column, row, strict=True):
            tally[_canonical(value)] += 1
    return per_column


def differing_columns(url_a: str, url_b: str) -> dict[str, list[str]]:
    """Per table, the content columns whose values (as multisets) differ between a and b."""
    found = {}
    for table, known in COLUMNS.items():
        present = _present(url_a, table)
        columns = [c for c in known if c not in NOT_CONTENT and c in present]
        sql = f"SELECT {', '.join(columns)} FROM {table}"
        a, b = (_tallies(url, sql, len(columns)) for url in (url_a, url_b))
        differ = [c for c, x, y in zip(columns, a, b, strict=True) if x != y]
        if differ:
            found[table] = differ
    return found
