"""The floor of a skill-creator import: the importer's rows, written with the least work.

Reads every file of each skill-creator iteration under a folder (`<skill>-workspace/
iteration-<n>/`, SPEC §3.3), parses `benchmark.json`, `eval_metadata.json`, `grading.json`
and `timing.json` with orjson, reads each run's `outputs/` as the importer keeps them (path,
size and text), computes the content hashes the importer stores, and inserts the same rows
(skill, eval cases from eval_metadata.json, iteration with the recorded benchmark,
conditions, runs, gradings, expectations as assertion results) with `executemany` in one
transaction, through bench/floor.py's tables. The documented normalisations are applied, as
the rows would differ without them: expectation ids are slugs of their text, a missing
summary is computed, 0 tokens (and 0 ms without tokens) is "not recorded". No validation
and no ORM.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

from bench.floor import (
    ROLES,
    Database,
    _db_datetime,
    _json,
    _now,
    create_tables,
    schema_notes,
    search_document,
)

#: Treatment first, as the importer orders configurations.
CONFIG_ORDER = ("with_skill", "new_skill", "without_skill", "old_skill")
RUN_DIR = re.compile(r"^run-(\d+)$")
OUTPUT_PREVIEW_BYTES = 20_000
GRADING_EXTRA = ("execution_metrics", "timing", "claims", "user_notes_summary", "eval_feedback")
NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slugify(text: str) -> str:
    """The importer's id for a free-text expectation (runs.case_assertions)."""
    slug = NOT_SLUG.sub("-", text.lower()).strip("-")
    return slug[:80].rstrip("-") or "expectation"


def unique_slugs(texts: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    slugs = []
    for text in texts:
        slug = slugify(text)
        seen[slug] = seen.get(slug, 0) + 1
        slugs.append(slug if seen[slug] == 1 else f"{slug}-{seen[slug]}")
    return slugs


def read_files(folder: Path) -> tuple[dict[str, bytes], list[str]]:
    """Every file under an iteration folder by POSIX relative path, and the paths sorted."""
    files: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith(("env-", "."))]
        prefix = os.path.relpath(dirpath, folder).replace(os.sep, "/")
        prefix = "" if prefix == "." else prefix + "/"
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as handle:
                files[prefix + name] = handle.read()
    return files, sorted(files)


def digests(files: dict[str, bytes], ordered: list[str]) -> tuple[str, dict[str, str]]:
    """The iteration's content hash and each run folder's (`eval-*/<config>/run-<k>/`)."""
    whole = hashlib.sha256()
    runs: dict[str, Any] = defaultdict(hashlib.sha256)
    for relpath in ordered:
        entry = relpath.encode() + b"\0" + hashlib.sha256(files[relpath]).digest()
        whole.update(entry)
        parts = relpath.split("/", 3)
        if len(parts) == 4 and parts[0].startswith("eval-") and RUN_DIR.match(parts[2]):
            runs[f"{parts[0]}/{parts[1]}/{parts[2]}/"].update(entry)
    return whole.hexdigest(), {prefix: h.hexdigest() for prefix, h in runs.items()}


def find_iterations(root: Path) -> list[tuple[str, Path]]:
    """(skill name, folder) of every folder under `root` that holds eval-* folders."""
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        if any(d.startswith("eval-") for d in dirnames):
            folder = Path(dirpath)
            found.append((folder.parent.name.removesuffix("-workspace"), folder))
            dirnames[:] = []
        else:
            dirnames.sort()
    return sorted(found, key=lambda pair: str(pair[1]))


class SkillCreatorFloor:
    """Writes skill-creator iterations' rows into a migrated database, in one transaction."""

    def __init__(self, target: Path | str):
        self.db = Database(target)
        self.tables = create_tables(self.db)
        self.ids: dict[str, int] = defaultdict(int)
        self.skills: dict[str, int] = {}
        self.numbers: dict[int, int] = defaultdict(int)
        self.now = _now()

    def next_id(self, table: str) -> int:
        self.ids[table] += 1
        return self.ids[table]

    def run(self, root: Path) -> None:
        self.db.begin()
        for skill_name, folder in find_iterations(root):
            self.iteration(skill_name, folder, display=f"{root}/{folder.relative_to(root)}")
        self.db.commit_and_close()

    def skill(self, name: str) -> int:
        if name not in self.skills:
            self.skills[name] = self.next_id("skill")
            self.tables["runs_skill"].insert(
                [(self.skills[name], name, "", "", self.now, self.now)]
            )
        return self.skills[name]

    def iteration(self, folder_skill: str, folder: Path, *, display: str) -> None:
        files, ordered = read_files(folder)
        content_hash, run_hashes = digests(files, ordered)
        benchmark = orjson.loads(files["benchmark.json"]) if "benchmark.json" in files else None
        metadata = (benchmark or {}).get("metadata") or {}
        skill_id = self.skill(str(metadata.get("skill_name") or folder_skill))
        timestamp = metadata.get("timestamp") or ""
        iteration_id = self.next_id("iteration")
        self.numbers[skill_id] += 1
        stored = benchmark
        if benchmark and isinstance(benchmark.get("runs"), list):
            # As the importer does when run folders hold the runs: benchmark.json's copies
            # of them are not stored twice, only their number.
            stored = {k: v for k, v in benchmark.items() if k != "runs"}
            stored["runs_not_kept"] = len(benchmark["runs"])
        extra = {}
        if benchmark and isinstance(benchmark.get("notes"), list):
            extra["benchmark_notes"] = benchmark["notes"]
        self.tables["runs_iteration"].insert(
            [
                (
                    iteration_id,
                    skill_id,
                    self.numbers[skill_id],
                    folder.name,
                    "",
                    f"{folder.name}@{timestamp}",
                    "skill-creator",
                    display,
                    "new-skill",
                    "",
                    str(metadata.get("executor_model") or ""),
                    "",
                    "skill-creator",
                    _db_datetime(timestamp),
                    "[]",
                    0,
                    _json(stored) if stored is not None else None,
                    None,
                    "{}",
                    "",
                    "",
                    "{}",
                    _json(extra),
                    content_hash,
                    self.now,
                    self.now,
                )
            ]
        )

        metadata_by_dir = {
            relpath.split("/", 1)[0]: orjson.loads(files[relpath])
            for relpath in ordered
            if relpath.count("/") == 1 and relpath.endswith("/eval_metadata.json")
        }
        by_prefix = self.outputs(ordered, files, run_hashes)
        configs = sorted({prefix.split("/")[1] for prefix in run_hashes})
        condition_ids = self.conditions(iteration_id, configs)
        case_ids = {
            eval_dir: self.eval_case(skill_id, eval_dir, metadata)
            for eval_dir, metadata in metadata_by_dir.items()
        }

        run_rows: list[tuple[Any, ...]] = []
        grading_rows: list[tuple[Any, ...]] = []
        result_rows: list[tuple[Any, ...]] = []
        search_rows: list[tuple[Any, ...]] = []
        for prefix, run_hash in run_hashes.items():
            eval_dir, config, run_dir, _ = prefix.split("/")
            eval_metadata = metadata_by_dir[eval_dir]
            eval_id = str(eval_metadata["eval_id"])
            timing = orjson.loads(files[prefix + "timing.json"])
            # skill-creator writes zeros for what it did not record: 0 tokens is never a
            # measurement, and 0 ms neither without tokens.
            tokens = timing.get("total_tokens") or None
            duration = timing.get("duration_ms")
            if not duration and timing.get("total_duration_seconds"):
                duration = timing["total_duration_seconds"] * 1000
            duration = duration if duration or tokens else None
            run_id = self.next_id("run")
            run_rows.append(
                (
                    run_id,
                    iteration_id,
                    condition_ids[config],
                    case_ids[eval_dir],
                    eval_id,
                    int(run_dir[len("run-") :]),
                    prefix[:-1],
                    "completed",
                    "",
                    eval_metadata.get("prompt") or "",
                    "",
                    "[]",
                    0,
                    "[]",
                    _json({"outputs": by_prefix[prefix]}) if by_prefix[prefix] else "{}",
                    tokens,
                    round(duration) if duration is not None else None,
                    "skill-creator" if tokens or duration else "",
                    None,
                    run_hash,
                )
            )
            grading = orjson.loads(files[prefix + "grading.json"])
            expectations = grading.get("expectations") or []
            passed = sum(1 for e in expectations if e["passed"])
            summary = grading.get("summary") or {}
            computed = not {"passed", "failed", "total", "pass_rate"} <= set(summary)
            if computed:
                total = len(expectations)
                summary = {
                    "passed": passed,
                    "failed": total - passed,
                    "total": total,
                    "pass_rate": passed / total if total else 0.0,
                }
            grading_id = self.next_id("grading")
            grading_rows.append(
                (
                    grading_id,
                    run_id,
                    "skill-creator",
                    summary["passed"],
                    summary["failed"],
                    summary["total"],
                    float(summary["pass_rate"]),
                    computed,
                    None,
                    None,
                    None,
                    None,
                    False,
                    _json({k: grading[k] for k in GRADING_EXTRA if k in grading}),
                )
            )
            search_rows.append(
                search_document(
                    run_id,
                    skill_id,
                    iteration_id,
                    config,
                    "completed",
                    float(summary["pass_rate"]),
                    eval_metadata.get("prompt") or "",
                    "",
                    [e["evidence"] for e in expectations if e.get("evidence")],
                    [],
                )
            )
            slugs = unique_slugs([e["text"] for e in expectations])
            for position, (slug, e) in enumerate(zip(slugs, expectations, strict=True)):
                result_rows.append(
                    (
                        self.next_id("result"),
                        grading_id,
                        slug,
                        False,
                        position,
                        e["passed"],
                        e.get("evidence") or "",
                        None,
                        "llm_judge",
                        e["text"],
                    )
                )
        self.tables["runs_run"].insert(run_rows)
        self.tables["runs_grading"].insert(grading_rows)
        self.tables["runs_assertionresult"].insert(result_rows)
        self.tables["search_searchdocument"].insert(search_rows)

    def outputs(
        self, ordered: list[str], files: dict[str, bytes], run_hashes: dict[str, str]
    ) -> dict[str, list[dict[str, Any]]]:
        """Each run's outputs/ files as the importer keeps them: path, size and text."""
        found: dict[str, list[dict[str, Any]]] = {prefix: [] for prefix in run_hashes}
        for relpath in ordered:
            parts = relpath.split("/", 4)
            if len(parts) == 5 and parts[3] == "outputs":
                raw = files[relpath]
                entry: dict[str, Any] = {"path": parts[4], "size": len(raw)}
                if len(raw) <= OUTPUT_PREVIEW_BYTES:
                    with contextlib.suppress(UnicodeDecodeError):
                        entry["text"] = raw.decode("utf-8")
                found["/".join(parts[:3]) + "/"].append(entry)
        return found

    def conditions(self, iteration_id: int, configs: list[str]) -> dict[str, int]:
        ordered = [c for c in CONFIG_ORDER if c in configs]
        ordered += sorted(set(configs) - set(CONFIG_ORDER))
        ids = {}
        rows = []
        for position, name in enumerate(ordered):
            ids[name] = self.next_id("condition")
            rows.append(
                (
                    ids[name],
                    iteration_id,
                    name,
                    ROLES.get(name, "other"),
                    position,
                    name != "without_skill",
                    "",
                    "",
                )
            )
        self.tables["runs_condition"].insert(rows)
        return ids

    def eval_case(self, skill_id: int, eval_dir: str, metadata: dict[str, Any]) -> int:
        """An eval case from eval_metadata.json: its assertions are judged expectations."""
        texts = [str(a) for a in metadata.get("assertions") or []]
        assertions = [
            {"id": slug, "type": "llm_judge", "text": text, "rubric": text}
            for slug, text in zip(unique_slugs(texts), texts, strict=True)
        ]
        fingerprint = hashlib.sha256(
            orjson.dumps(metadata, option=orjson.OPT_SORT_KEYS)
        ).hexdigest()
        case_id = self.next_id("evalcase")
        self.tables["runs_evalcase"].insert(
            [
                (
                    case_id,
                    skill_id,
                    str(metadata["eval_id"]),
                    fingerprint,
                    "eval_metadata.json",
                    "skill-creator",
                    _json(metadata),
                    str(metadata.get("eval_name") or eval_dir.removeprefix("eval-")),
                    metadata.get("prompt") or "",
                    "",
                    _json(assertions),
                    True,
                    "[]",
                    1.0,
                    self.now,
                )
            ]
        )
        return case_id


def floor_import_skill_creator(root: Path, db: Path | str) -> list[str]:
    """Write the skill-creator iterations under `root` into `db` (migrated); schema notes."""
    floor = SkillCreatorFloor(db)
    floor.run(root)
    return schema_notes(floor.tables)
