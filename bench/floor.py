"""The floor of an import: the same rows as `importworkspace`, written with the least work.

Reads every file of an eval-magic workspace root, parses the JSON with orjson, computes the
content hashes the importer stores, and inserts skills, eval cases, iterations, conditions,
runs (JSON columns serialised with orjson), gradings and assertion results with
`executemany` (sqlite3, or psycopg on PostgreSQL), all in one transaction. No validation,
no ORM: what is left is the cost of reading, parsing, hashing and the database itself, which
no importer can go below. bench/floor_skill_creator.py is the same for a skill-creator
workspace.

The columns are those the importer fills (runs/importing/writer.py). The project's schema
moves while this file does not, so each table's columns are read from the migrated database:
a column the floor does not know but must fill (NOT NULL, no default) gets a neutral
constant and is reported, and a column the floor knows but the table lost is left out.
"""

from __future__ import annotations

import hashlib
import operator
import os
import re
import sqlite3
import string
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

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
    # Since issue #15 an import also writes each run's search document (runs/search/index.py):
    # on SQLite the FTS5 trigger of the migrated schema indexes it, on PostgreSQL the floor
    # computes its vector in the INSERT, as the importer does.
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
#: A tool call's arguments and result are searched by their first characters (the importer's
#: TOOL_TEXT_CHARS); a conversation's text stops at MAX_CONVERSATION_CHARS.
TOOL_TEXT_CHARS = 200
MAX_CONVERSATION_CHARS = 300_000
#: The PostgreSQL vector: the text columns with their weights, punctuation read as spaces.
WEIGHTS = (
    ("final_message", "A"),
    ("prompt", "A"),
    ("evidence", "B"),
    ("notes", "B"),
    ("conversation", "C"),
)
_PUNCTUATION = str.maketrans(dict.fromkeys(string.punctuation, " "))
_PUNCTUATION_CHARS = re.compile(f"[{re.escape(string.punctuation)}]")
ROLES = {
    "with_skill": "treatment",
    "new_skill": "treatment",
    "without_skill": "control",
    "old_skill": "control",
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
        self.placeholder = "%s" if self.postgres else "?"
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
        values = [db.placeholder] * len(keep) + [column.neutral for column in filled]
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
                (*row, *(_without_punctuation(row[i]) for i in self.text_positions)) for row in rows
            ]
        super().insert(rows)


def _without_punctuation(text: str) -> str:
    return text.translate(_PUNCTUATION) if text.isascii() else _PUNCTUATION_CHARS.sub(" ", text)


def _unescaped(escape: re.Match[str]) -> str:
    return " " if escape.group(1) in "nrt" else escape.group(1)


def _event_text(event: dict[str, Any]) -> str:
    if event.get("type", "tool_invocation") != "tool_invocation":
        return str(event.get("text") or "")
    parts = [str(event.get("name") or "")]
    for key in ("args", "result"):
        value = event.get(key)
        if value is not None:
            if not isinstance(value, str):
                value = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
                if "\\" in value:  # JSON escapes read as text: \n a space, \" a quote
                    value = re.sub(r"\\(.)", _unescaped, value)
            parts.append(value[:TOOL_TEXT_CHARS])
    return "\n".join(parts)


def search_document(
    run_id: int,
    skill_id: int,
    iteration_id: int,
    condition: str,
    status: str,
    pass_rate: float | None,
    prompt: str,
    final_message: str,
    evidence: list[str],
    events: list[dict[str, Any]],
) -> tuple[Any, ...]:
    """A run's search document as the importer writes it (no reviewer notes in the bench)."""
    if status == "errored" or pass_rate is None:
        outcome = ""
    else:
        outcome = "pass" if pass_rate >= 1 else "fail"
    conversation = "\n\n".join(_event_text(e) for e in events)[:MAX_CONVERSATION_CHARS]
    return (run_id, skill_id, iteration_id, condition, outcome, prompt, final_message,
            "\n".join(evidence), "", conversation)  # fmt: skip


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


def _now() -> str:
    return datetime.now(UTC).replace(tzinfo=None).isoformat(sep=" ")


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _warnings(benchmark: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The recorded benchmark's validity warnings as an iteration stores them (runs.warnings)."""
    recorded = (benchmark or {}).get("validity_warnings") or []
    return [{"code": "recorded", "params": {"text": text}, "message": text} for text in recorded]


def _db_datetime(value: str | None) -> str | None:
    """An ISO timestamp as Django stores an aware datetime in SQLite (naive UTC)."""
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed.isoformat(sep=" ")


def read_files(folder: Path) -> dict[str, bytes]:
    """Every file under an iteration folder, by POSIX relative path (env-* folders skipped)."""
    files: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith("env-")]
        prefix = os.path.relpath(dirpath, folder).replace(os.sep, "/")
        prefix = "" if prefix == "." else prefix + "/"
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as handle:
                files[prefix + name] = handle.read()
    return files


def digests(files: dict[str, bytes]) -> tuple[str, dict[str, str]]:
    """The iteration's content hash and each run folder's, as the importer computes them."""
    whole = hashlib.sha256()
    runs: dict[str, Any] = defaultdict(hashlib.sha256)
    for relpath in sorted(files):
        entry = relpath.encode() + b"\0" + hashlib.sha256(files[relpath]).digest()
        whole.update(entry)
        parts = relpath.split("/")
        if len(parts) == 4 and parts[0].startswith("eval-"):
            runs["/".join(parts[:3])].update(entry)
    return whole.hexdigest(), {prefix: h.hexdigest() for prefix, h in runs.items()}


def skill_called(events: list[dict[str, Any]], skill: str) -> bool:
    return any(
        e.get("type") == "tool_invocation"
        and e.get("name") == "Skill"
        and isinstance(e.get("args"), dict)
        and e["args"].get("skill") == skill
        for e in events
    )


class Floor:
    """Writes a workspace root's rows into a migrated database, in one transaction."""

    def __init__(self, target: Path | str):
        self.db = Database(target)
        self.tables = create_tables(self.db)
        self.ids: dict[str, int] = defaultdict(int)
        self.skills: dict[str, int] = {}
        self.eval_cases: dict[tuple[int, str, str], int] = {}
        self.now = _now()

    def schema_notes(self) -> list[str]:
        return schema_notes(self.tables)

    def next_id(self, table: str) -> int:
        self.ids[table] += 1
        return self.ids[table]

    def run(self, workspace: Path) -> None:
        self.db.begin()
        for skill_dir in sorted(p for p in workspace.iterdir() if p.is_dir()):
            iterations = sorted(
                (p for p in skill_dir.iterdir() if (p / "conditions.json").is_file()),
                key=lambda p: int(re.sub(r"\D", "", p.name) or 0),
            )
            for number, folder in enumerate(iterations, start=1):
                self.iteration(skill_dir.name, folder, number)
        self.db.commit_and_close()

    def skill(self, name: str) -> int:
        if name not in self.skills:
            self.skills[name] = self.next_id("skill")
            self.tables["runs_skill"].insert(
                [(self.skills[name], name, "", "", self.now, self.now)]
            )
        return self.skills[name]

    def iteration(self, skill_name: str, folder: Path, number: int) -> None:
        skill_id = self.skill(skill_name)
        files = read_files(folder)
        content_hash, run_hashes = digests(files)
        conditions = orjson.loads(files["conditions.json"])
        benchmark = orjson.loads(files["benchmark.json"]) if "benchmark.json" in files else None
        iteration_id = self.next_id("iteration")
        label = folder.name
        self.tables["runs_iteration"].insert(
            [
                (
                    iteration_id,
                    skill_id,
                    number,
                    label,
                    conditions.get("label") or "",
                    f"{label}@{conditions.get('timestamp') or ''}",
                    "eval-magic",
                    str(folder),
                    conditions["mode"],
                    conditions.get("baseline") or "",
                    conditions.get("agent_model") or "",
                    conditions.get("judge_model") or "",
                    conditions.get("harness") or "",
                    _db_datetime(conditions.get("timestamp")),
                    _json(_warnings(benchmark)),
                    0,
                    _json(benchmark) if benchmark is not None else None,
                    None,
                    _json({"conditions.json": conditions}),
                    files.get("skill-snapshot.md", b"").decode("utf-8-sig"),
                    "",
                    "{}",
                    "{}",
                    content_hash,
                    self.now,
                    self.now,
                )
            ]
        )
        condition_ids = self.conditions(iteration_id, conditions, benchmark)

        run_rows: list[list[Any]] = []
        grading_rows: list[tuple[Any, ...]] = []
        result_rows: list[tuple[Any, ...]] = []
        search_rows: list[tuple[Any, ...]] = []
        prompts: dict[str, str] = {}
        assertion_ids: dict[str, set[str]] = defaultdict(set)
        for prefix in sorted(run_hashes):
            eval_dir, condition, run_dir = prefix.split("/")
            eval_id = eval_dir[len("eval-") :]
            record = orjson.loads(files[prefix + "/run.json"])
            conversation = orjson.loads(files[prefix + "/conversation.json"])
            timing = orjson.loads(files[prefix + "/timing.json"])
            grading = orjson.loads(files[prefix + "/grading.json"])
            prompts.setdefault(eval_id, record["prompt"])
            events = conversation["events"]
            meta = {k: v for k, v in conversation.items() if k not in {"status", "events"}}
            run_id = self.next_id("run")
            run_rows.append(
                [
                    run_id,
                    iteration_id,
                    condition_ids[condition],
                    eval_id,  # the eval case's id, once the iteration's definitions are known
                    eval_id,
                    int(run_dir[len("run-") :]),
                    prefix,
                    conversation["status"],
                    conversation.get("stop_reason", ""),
                    record["prompt"],
                    record["final_message"],
                    _json(events),
                    len(events),
                    _json(record["tool_invocations"]),
                    _json({"conversation_meta": meta} if meta else {}),
                    timing.get("total_tokens"),
                    timing.get("duration_ms"),
                    timing.get("source", ""),
                    skill_called(events, skill_name),
                    run_hashes[prefix],
                ]
            )
            summary = grading["summary"]
            meta_summary = grading.get("meta_summary") or {}
            has_meta = "meta_summary" in grading
            grading_id = self.next_id("grading")
            grading_rows.append(
                (
                    grading_id,
                    run_id,
                    "eval-magic",
                    summary["passed"],
                    summary["failed"],
                    summary["total"],
                    summary["pass_rate"],
                    False,
                    meta_summary.get("passed"),
                    meta_summary.get("failed"),
                    meta_summary.get("total"),
                    meta_summary.get("skill_invoked"),
                    has_meta,
                    "{}",
                )
            )
            results = [(False, r) for r in grading["assertion_results"]]
            results += [(True, r) for r in grading.get("meta_results") or []]
            search_rows.append(
                search_document(
                    run_id,
                    skill_id,
                    iteration_id,
                    condition,
                    conversation["status"],
                    summary["pass_rate"],
                    record["prompt"],
                    record["final_message"],
                    [r["evidence"] for m, r in results if not m and r.get("evidence")],
                    events or record["tool_invocations"],
                )
            )
            for position, (is_meta, r) in enumerate(results):
                if not is_meta:
                    assertion_ids[eval_id].add(r["id"])
                result_rows.append(
                    (
                        self.next_id("result"),
                        grading_id,
                        r["id"],
                        is_meta,
                        position,
                        r["passed"],
                        r.get("evidence") or "",
                        r.get("confidence"),
                        r.get("grader") or "",
                        "",
                    )
                )
        case_ids = {
            eval_id: self.eval_case(skill_id, eval_id, prompt, assertion_ids[eval_id])
            for eval_id, prompt in prompts.items()
        }
        for row in run_rows:
            row[3] = case_ids[row[3]]
        self.tables["runs_run"].insert(map(tuple, run_rows))
        self.tables["runs_grading"].insert(grading_rows)
        self.tables["runs_assertionresult"].insert(result_rows)
        self.tables["search_searchdocument"].insert(search_rows)

    def conditions(
        self, iteration_id: int, conditions: dict[str, Any], benchmark: dict[str, Any] | None
    ) -> dict[str, int]:
        declared = {c["name"]: c for c in conditions["conditions"]}
        order = (benchmark or {}).get("conditions_compared") or []
        names = [n for n in order if n in declared] + [n for n in declared if n not in order]
        ids = {}
        rows = []
        for position, name in enumerate(names):
            ids[name] = self.next_id("condition")
            entry = declared[name]
            rows.append(
                (
                    ids[name],
                    iteration_id,
                    name,
                    ROLES.get(name, "other"),
                    position,
                    entry.get("skill_path") is not None,
                    entry.get("skill_path") or "",
                    entry.get("staged_skill_slug") or "",
                )
            )
        self.tables["runs_condition"].insert(rows)
        return ids

    def eval_case(self, skill_id: int, eval_id: str, prompt: str, assertion_ids: set[str]) -> int:
        """The importer's definition rebuilt from results (no evals.json in the workspace)."""
        assertions = [{"id": a} for a in sorted(assertion_ids)]
        definition = {"id": eval_id, "prompt": prompt, "assertions": assertions}
        fingerprint = hashlib.sha256(
            orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)
        ).hexdigest()
        key = (skill_id, eval_id, fingerprint)
        if key not in self.eval_cases:
            self.eval_cases[key] = self.next_id("evalcase")
            self.tables["runs_evalcase"].insert(
                [
                    (
                        self.eval_cases[key],
                        skill_id,
                        eval_id,
                        fingerprint,
                        "results",
                        "",
                        _json(definition),
                        "",
                        prompt,
                        "",
                        _json(assertions),
                        True,
                        "[]",
                        1.0,
                        self.now,
                    )
                ]
            )
        return self.eval_cases[key]


def floor_import(workspace: Path, db: Path | str) -> list[str]:
    """Write the workspace's rows into `db` (a migrated SQLite file or a PostgreSQL URL);
    notes on schema drift."""
    floor = Floor(db)
    floor.run(workspace)
    return floor.schema_notes()
