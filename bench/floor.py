"""The floor of an eval-magic import: the same rows as `importworkspace`, least work.

Reads every file of a workspace root, parses the JSON with orjson, computes the content
hashes the importer stores, and inserts the same rows (search documents included) with
`executemany` in one transaction: no validation, no ORM, only what no importer can skip.
bench/floor_skill_creator.py is the same for a skill-creator workspace.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench.floor_search import search_document
from bench.floor_writer import FloorWriter, RunRows, db_datetime, digests, json_text, read_files


def skill_called(events: list[dict[str, Any]], skill: str) -> bool:
    return any(
        e.get("type") == "tool_invocation"
        and e.get("name") == "Skill"
        and isinstance(e.get("args"), dict)
        and e["args"].get("skill") == skill
        for e in events
    )


def _warnings(benchmark: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The recorded benchmark's validity warnings as an iteration stores them (runs.warnings)."""
    recorded = (benchmark or {}).get("validity_warnings") or []
    return [{"code": "recorded", "params": {"text": text}, "message": text} for text in recorded]


def _run_folder(relpath: str) -> str | None:
    """`eval-<id>/<condition>/run-<k>` of a file in a run folder."""
    parts = relpath.split("/")
    if len(parts) == 4 and parts[0].startswith("eval-"):
        return "/".join(parts[:3])
    return None


@dataclass(frozen=True)
class _Context:
    """What every run row of an iteration refers to."""

    skill_id: int
    skill_name: str
    iteration_id: int
    condition_ids: dict[str, int]


class Floor(FloorWriter):
    """Writes a workspace root's rows into a migrated database, in one transaction."""

    def __init__(self, target: Path | str):
        super().__init__(target)
        self.eval_cases: dict[tuple[int, str, str], int] = {}

    def run(self, workspace: Path) -> None:
        self.db.begin()
        for skill_dir in sorted(p for p in workspace.iterdir() if p.is_dir()):
            iterations = sorted(
                (p for p in skill_dir.iterdir() if (p / "conditions.json").is_file()),
                key=lambda p: int(re.sub(r"\D", "", p.name) or 0),
            )
            for number, folder in enumerate(iterations, start=1):
                self.write_iteration(skill_dir.name, folder, number)
        self.db.commit_and_close()

    def write_iteration(self, skill_name: str, folder: Path, number: int) -> None:
        skill_id = self.skill(skill_name)
        files = read_files(folder, skip=("env-",))
        content_hash, run_hashes = digests(files, _run_folder)
        conditions = orjson.loads(files["conditions.json"])
        benchmark = orjson.loads(files["benchmark.json"]) if "benchmark.json" in files else None
        iteration_id = self.iteration(
            skill_id=skill_id,
            number=number,
            label=folder.name,
            run_label=conditions.get("label") or "",
            source_key=f"{folder.name}@{conditions.get('timestamp') or ''}",
            source_kind="eval-magic",
            source_path=str(folder),
            mode=conditions["mode"],
            baseline=conditions.get("baseline") or "",
            agent_model=conditions.get("agent_model") or "",
            judge_model=conditions.get("judge_model") or "",
            harness=conditions.get("harness") or "",
            generated_at=db_datetime(conditions.get("timestamp")),
            validity_warnings=json_text(_warnings(benchmark)),
            recorded_benchmark=json_text(benchmark) if benchmark is not None else None,
            provenance=json_text({"conditions.json": conditions}),
            skill_snapshot=files.get("skill-snapshot.md", b"").decode("utf-8-sig"),
            extra="{}",
            content_hash=content_hash,
        )
        context = _Context(
            skill_id,
            skill_name,
            iteration_id,
            self.write_conditions(iteration_id, conditions, benchmark),
        )
        rows = RunRows()
        prompts: dict[str, str] = {}
        assertion_ids: dict[str, set[str]] = defaultdict(set)
        for prefix in sorted(run_hashes):
            eval_id, prompt, ids = self.add_run(rows, context, prefix, files, run_hashes[prefix])
            prompts.setdefault(eval_id, prompt)
            assertion_ids[eval_id].update(ids)
        case_ids = {
            eval_id: self.write_eval_case(skill_id, eval_id, prompt, assertion_ids[eval_id])
            for eval_id, prompt in prompts.items()
        }
        # A run names its eval case by eval id until the iteration's definitions are known.
        rows.runs = [(*row[:3], case_ids[row[3]], *row[4:]) for row in rows.runs]
        self.insert_runs(rows)

    def add_run(
        self, rows: RunRows, context: _Context, prefix: str, files: dict[str, bytes], run_hash: str
    ) -> tuple[str, str, set[str]]:
        """A run folder's rows; its eval id, prompt and assertion ids (for its eval case)."""
        eval_dir, condition, run_dir = prefix.split("/")
        eval_id = eval_dir[len("eval-") :]
        record = orjson.loads(files[prefix + "/run.json"])
        conversation = orjson.loads(files[prefix + "/conversation.json"])
        timing = orjson.loads(files[prefix + "/timing.json"])
        grading = orjson.loads(files[prefix + "/grading.json"])
        events = conversation["events"]
        meta = {k: v for k, v in conversation.items() if k not in {"status", "events"}}
        run_id = self.next_id("run")
        rows.runs.append(
            (
                run_id,
                context.iteration_id,
                context.condition_ids[condition],
                eval_id,  # the eval case's id, once the iteration's definitions are known
                eval_id,
                int(run_dir[len("run-") :]),
                prefix,
                conversation["status"],
                conversation.get("stop_reason", ""),
                record["prompt"],
                record["final_message"],
                json_text(events),
                len(events),
                json_text(record["tool_invocations"]),
                json_text({"conversation_meta": meta} if meta else {}),
                timing.get("total_tokens"),
                timing.get("duration_ms"),
                timing.get("source", ""),
                skill_called(events, context.skill_name),
                run_hash,
            )
        )
        grading_id = self.add_grading(rows, run_id, grading)
        results = [(False, r) for r in grading["assertion_results"]]
        results += [(True, r) for r in grading.get("meta_results") or []]
        rows.search.append(
            search_document(
                run_id,
                context.skill_id,
                context.iteration_id,
                condition,
                conversation["status"],
                grading["summary"]["pass_rate"],
                record["prompt"],
                record["final_message"],
                [r["evidence"] for m, r in results if not m and r.get("evidence")],
                events or record["tool_invocations"],
            )
        )
        for position, (is_meta, r) in enumerate(results):
            rows.results.append(
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
        return eval_id, record["prompt"], {r["id"] for is_meta, r in results if not is_meta}

    def add_grading(self, rows: RunRows, run_id: int, grading: dict[str, Any]) -> int:
        summary = grading["summary"]
        meta_summary = grading.get("meta_summary") or {}
        grading_id = self.next_id("grading")
        rows.gradings.append(
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
                "meta_summary" in grading,
                "{}",
            )
        )
        return grading_id

    def write_conditions(
        self, iteration_id: int, conditions: dict[str, Any], benchmark: dict[str, Any] | None
    ) -> dict[str, int]:
        """The declared conditions, in the benchmark's order where it gives one."""
        declared = {c["name"]: c for c in conditions["conditions"]}
        order = (benchmark or {}).get("conditions_compared") or []
        names = [n for n in order if n in declared] + [n for n in declared if n not in order]
        return self.conditions(
            iteration_id,
            [
                (
                    name,
                    declared[name].get("skill_path") is not None,
                    declared[name].get("skill_path") or "",
                    declared[name].get("staged_skill_slug") or "",
                )
                for name in names
            ],
        )

    def write_eval_case(
        self, skill_id: int, eval_id: str, prompt: str, assertion_ids: set[str]
    ) -> int:
        """The importer's definition rebuilt from results (no evals.json in the workspace)."""
        assertions = [{"id": a} for a in sorted(assertion_ids)]
        definition = {"id": eval_id, "prompt": prompt, "assertions": assertions}
        fingerprint = hashlib.sha256(
            orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)
        ).hexdigest()
        key = (skill_id, eval_id, fingerprint)
        if key not in self.eval_cases:
            self.eval_cases[key] = self.eval_case(
                skill_id=skill_id,
                eval_id=eval_id,
                fingerprint=fingerprint,
                origin="results",
                dialect="",
                definition=json_text(definition),
                name="",
                prompt=prompt,
                assertions=json_text(assertions),
            )
        return self.eval_cases[key]


def floor_import(workspace: Path, db: Path | str) -> list[str]:
    """Write the workspace's rows into `db` (a migrated SQLite file or a PostgreSQL URL);
    notes on schema drift."""
    floor = Floor(db)
    floor.run(workspace)
    return floor.schema_notes()
