"""The floor of a skill-creator import: the importer's rows, written with the least work.

Reads each iteration under a folder (`<skill>-workspace/iteration-<n>/`, SPEC §3.3), parses
its JSON with orjson, keeps each run's `outputs/` as the importer does, and inserts the same
rows through bench/floor_writer.py in one transaction. The importer's documented
normalisations are applied, as the rows would differ without them: expectation ids are
slugs of their text, a missing summary is computed, 0 tokens is "not recorded".
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

from bench.floor_search import search_document
from bench.floor_writer import FloorWriter, RunRows, db_datetime, digests, json_text, read_files

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


def _run_folder(relpath: str) -> str | None:
    """`eval-<n>/<config>/run-<k>/` of a file in a run folder."""
    parts = relpath.split("/", 3)
    if len(parts) == 4 and parts[0].startswith("eval-") and RUN_DIR.match(parts[2]):
        return f"{parts[0]}/{parts[1]}/{parts[2]}/"
    return None


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


class SkillCreatorFloor(FloorWriter):
    """Writes skill-creator iterations' rows into a migrated database, in one transaction."""

    def __init__(self, target: Path | str):
        super().__init__(target)
        self.numbers: dict[int, int] = defaultdict(int)

    def run(self, root: Path) -> None:
        self.db.begin()
        for skill_name, folder in find_iterations(root):
            self.write_iteration(skill_name, folder, display=f"{root}/{folder.relative_to(root)}")
        self.db.commit_and_close()

    def write_iteration(self, folder_skill: str, folder: Path, *, display: str) -> None:
        files = read_files(folder, skip=("env-", "."))
        ordered = sorted(files)
        content_hash, run_hashes = digests(files, _run_folder)
        benchmark = orjson.loads(files["benchmark.json"]) if "benchmark.json" in files else None
        metadata = (benchmark or {}).get("metadata") or {}
        skill_id = self.skill(str(metadata.get("skill_name") or folder_skill))
        iteration_id = self.write_iteration_row(
            skill_id, folder, benchmark, content_hash, display=display
        )
        metadata_by_dir = {
            relpath.split("/", 1)[0]: orjson.loads(files[relpath])
            for relpath in ordered
            if relpath.count("/") == 1 and relpath.endswith("/eval_metadata.json")
        }
        outputs = self.outputs(ordered, files, run_hashes)
        configs = sorted({prefix.split("/")[1] for prefix in run_hashes})
        condition_ids = self.write_conditions(iteration_id, configs)
        case_ids = {
            eval_dir: self.write_eval_case(skill_id, eval_dir, metadata)
            for eval_dir, metadata in metadata_by_dir.items()
        }
        rows = RunRows()
        for prefix, run_hash in run_hashes.items():
            eval_dir, config, run_dir, _ = prefix.split("/")
            run_id = self.next_id("run")
            eval_metadata = metadata_by_dir[eval_dir]
            timing = orjson.loads(files[prefix + "timing.json"])
            rows.runs.append(
                (
                    run_id,
                    iteration_id,
                    condition_ids[config],
                    case_ids[eval_dir],
                    str(eval_metadata["eval_id"]),
                    int(run_dir[len("run-") :]),
                    prefix[:-1],
                    "completed",
                    "",
                    eval_metadata.get("prompt") or "",
                    "",
                    "[]",
                    0,
                    "[]",
                    json_text({"outputs": outputs[prefix]}) if outputs[prefix] else "{}",
                    *_recorded_timing(timing),
                    None,
                    run_hash,
                )
            )
            grading = orjson.loads(files[prefix + "grading.json"])
            pass_rate = self.add_grading(rows, run_id, grading)
            expectations = grading.get("expectations") or []
            rows.search.append(
                search_document(
                    run_id,
                    skill_id,
                    iteration_id,
                    config,
                    "completed",
                    pass_rate,
                    eval_metadata.get("prompt") or "",
                    "",
                    [e["evidence"] for e in expectations if e.get("evidence")],
                    [],
                )
            )
        self.insert_runs(rows)

    def write_iteration_row(
        self,
        skill_id: int,
        folder: Path,
        benchmark: dict[str, Any] | None,
        content_hash: str,
        *,
        display: str,
    ) -> int:
        metadata = (benchmark or {}).get("metadata") or {}
        timestamp = metadata.get("timestamp") or ""
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
        return self.iteration(
            skill_id=skill_id,
            number=self.numbers[skill_id],
            label=folder.name,
            run_label="",
            source_key=f"{folder.name}@{timestamp}",
            source_kind="skill-creator",
            source_path=display,
            mode="new-skill",
            baseline="",
            agent_model=str(metadata.get("executor_model") or ""),
            judge_model="",
            harness="skill-creator",
            generated_at=db_datetime(timestamp),
            validity_warnings="[]",
            recorded_benchmark=json_text(stored) if stored is not None else None,
            provenance="{}",
            skill_snapshot="",
            extra=json_text(extra),
            content_hash=content_hash,
        )

    def add_grading(self, rows: RunRows, run_id: int, grading: dict[str, Any]) -> float:
        """The run's grading and its expectations as assertion results; its pass rate."""
        expectations = grading.get("expectations") or []
        summary = grading.get("summary") or {}
        computed = not {"passed", "failed", "total", "pass_rate"} <= set(summary)
        if computed:
            passed = sum(1 for e in expectations if e["passed"])
            total = len(expectations)
            summary = {
                "passed": passed,
                "failed": total - passed,
                "total": total,
                "pass_rate": passed / total if total else 0.0,
            }
        grading_id = self.next_id("grading")
        rows.gradings.append(
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
                json_text({k: grading[k] for k in GRADING_EXTRA if k in grading}),
            )
        )
        slugs = unique_slugs([e["text"] for e in expectations])
        for position, (slug, e) in enumerate(zip(slugs, expectations, strict=True)):
            rows.results.append(
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
        return float(summary["pass_rate"])

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

    def write_conditions(self, iteration_id: int, configs: list[str]) -> dict[str, int]:
        """The configurations, treatment first as the importer orders them."""
        ordered = [c for c in CONFIG_ORDER if c in configs]
        ordered += sorted(set(configs) - set(CONFIG_ORDER))
        return self.conditions(
            iteration_id, [(name, name != "without_skill", "", "") for name in ordered]
        )

    def write_eval_case(self, skill_id: int, eval_dir: str, metadata: dict[str, Any]) -> int:
        """An eval case from eval_metadata.json: its assertions are judged expectations."""
        texts = [str(a) for a in metadata.get("assertions") or []]
        assertions = [
            {"id": slug, "type": "llm_judge", "text": text, "rubric": text}
            for slug, text in zip(unique_slugs(texts), texts, strict=True)
        ]
        fingerprint = hashlib.sha256(
            orjson.dumps(metadata, option=orjson.OPT_SORT_KEYS)
        ).hexdigest()
        return self.eval_case(
            skill_id=skill_id,
            eval_id=str(metadata["eval_id"]),
            fingerprint=fingerprint,
            origin="eval_metadata.json",
            dialect="skill-creator",
            definition=json_text(metadata),
            name=str(metadata.get("eval_name") or eval_dir.removeprefix("eval-")),
            prompt=metadata.get("prompt") or "",
            assertions=json_text(assertions),
        )


def _recorded_timing(timing: dict[str, Any]) -> tuple[int | None, int | None, str]:
    """(total_tokens, duration_ms, timing_source) as the importer reads timing.json.

    skill-creator writes zeros for what it did not record: 0 tokens is never a measurement,
    and 0 ms neither without tokens.
    """
    tokens = timing.get("total_tokens") or None
    duration = timing.get("duration_ms")
    if not duration and timing.get("total_duration_seconds"):
        duration = timing["total_duration_seconds"] * 1000
    duration = duration if duration or tokens else None
    source = "skill-creator" if tokens or duration else ""
    return tokens, round(duration) if duration is not None else None, source


def floor_import_skill_creator(root: Path, db: Path | str) -> list[str]:
    """Write the skill-creator iterations under `root` into `db` (migrated); schema notes."""
    floor = SkillCreatorFloor(db)
    floor.run(root)
    return floor.schema_notes()
