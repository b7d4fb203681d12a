"""After a large import: bring the database's planner statistics up to date.

PostgreSQL's autovacuum analyses a table only after a threshold of changes and some time;
until then the planner plans an iteration's first page on the statistics of an emptier
table. Over a 6,000-run iteration that chose an on-disk sort of 36,000 assertion results
(83 ms instead of 42 ms once analysed). SQLite has no statistics until ANALYZE runs;
`PRAGMA optimize` analyses the tables that need it, cheaply.
"""

from __future__ import annotations

from django.db import connection

from runs.models import AssertionResult, Grading, Iteration, Run

#: Below this many new or changed runs the old statistics still describe the tables.
RUNS_WORTH_ANALYSING = 1000
TABLES = (Iteration, Run, Grading, AssertionResult)


def refresh_after_import(runs_written: int) -> bool:
    """Analyse the result tables when an import wrote enough runs to move their
    statistics; whether it did. Outside any transaction, after the import committed."""
    if runs_written < RUNS_WORTH_ANALYSING:
        return False
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            names = ", ".join(connection.ops.quote_name(m._meta.db_table) for m in TABLES)
            cursor.execute(f"ANALYZE {names}")
        elif connection.vendor == "sqlite":
            cursor.execute("PRAGMA optimize")
        else:
            return False
    return True
