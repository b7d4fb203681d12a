"""skill-creator workspaces (SPEC §3.3): loose files, normalised as documented here.

Normalisations: expectations get the id `slugify(text)`; a missing `summary` is computed from
the expectations; 0 tokens with 0 time means "not recorded"; eval ids become strings; a lone
`benchmark.json` (no run folders beside it) is imported from its `runs[]`.
"""

from __future__ import annotations

import contextlib
import re
from collections import defaultdict
from typing import Any

from grading.graders.expectations import case_assertions, unique_slugs
from runs.models import SourceKind

from . import jsonfiles
from .definitions import matches_what_ran
from .errors import ImportFailure
from .eval_magic import eval_magic_grading, parse_timestamp, reconstructed_definition
from .records import (
    EvalDefinition,
    ParsedCondition,
    ParsedGrading,
    ParsedIteration,
    ParsedResult,
    ParsedReview,
    ParsedRun,
    fingerprint,
)
from .tree import FileTree

RUN_DIR = re.compile(r"^run-(\d+)$")
RUN_FILES = ("grading.json", "timing.json")
#: Treatment first, like eval-magic's conditions_compared.
CONFIG_ORDER = ["with_skill", "new_skill", "without_skill", "old_skill"]
OUTPUT_PREVIEW_BYTES = 20_000


def read_iteration(
    tree: FileTree, *, skill_name: str, label: str, definitions: dict[str, EvalDefinition]
) -> ParsedIteration:
    """Parse a skill-creator iteration folder (or a folder holding only benchmark.json)."""
    benchmark = None
    if "benchmark.json" in tree.files:
        benchmark = jsonfiles.load(
            tree.files["benchmark.json"],
            "skill-creator-benchmark",
            display=tree.shown("benchmark.json"),
        )
    metadata = (benchmark or {}).get("metadata") or {}
    timestamp = metadata.get("timestamp") or ""
    iteration = ParsedIteration(
        skill_name=str(metadata.get("skill_name") or skill_name),
        label=label,
        source_kind=SourceKind.SKILL_CREATOR,
        source_key=f"{label}@{timestamp}",
        source_path=tree.display,
        content_hash=tree.digest(),
        agent_model=str(metadata.get("executor_model") or ""),
        harness="skill-creator",
        generated_at=parse_timestamp(timestamp),
        recorded_benchmark=benchmark,
    )
    if benchmark and isinstance(benchmark.get("notes"), list):
        iteration.extra["benchmark_notes"] = benchmark["notes"]

    metadata_by_dir = _eval_metadata(tree)
    runs = [_read_run(tree, *cell, metadata_by_dir) for cell in _run_folders(tree)]
    if not runs and benchmark and benchmark.get("runs"):
        runs = _runs_from_benchmark(benchmark, display=tree.shown("benchmark.json"))
    if not runs:
        raise ImportFailure(
            "no eval-*/<configuration>/ run folders and no runs[] in benchmark.json",
            path=tree.display,
        )
    iteration.runs = runs

    configs = list(dict.fromkeys(run.condition for run in runs))
    ordered = [c for c in CONFIG_ORDER if c in configs] + sorted(set(configs) - set(CONFIG_ORDER))
    iteration.mode = "revision" if {"old_skill", "new_skill"} & set(configs) else "new-skill"
    iteration.conditions = [
        ParsedCondition(name=name, position=i, loads_skill=name != "without_skill")
        for i, name in enumerate(ordered)
    ]
    iteration.evals = _definitions(runs, metadata_by_dir, definitions)
    if "feedback.json" in tree.files:
        feedback = jsonfiles.load(
            tree.files["feedback.json"],
            "skill-creator-feedback",
            display=tree.shown("feedback.json"),
        )
        iteration.extra["feedback_status"] = feedback.get("status")
        iteration.reviews = [
            ParsedReview(
                run_relpath_key=review["run_id"],
                text=review["feedback"],
                created_at=parse_timestamp(review.get("timestamp")),
            )
            for review in feedback.get("reviews") or []
            if review["feedback"].strip()
        ]
    return iteration


def _eval_metadata(tree: FileTree) -> dict[str, dict[str, Any]]:
    found = {}
    for relpath, raw in tree.files.items():
        parts = relpath.split("/")
        if len(parts) == 2 and parts[0].startswith("eval-") and parts[1] == "eval_metadata.json":
            found[parts[0]] = jsonfiles.load(
                raw, "skill-creator-eval-metadata", display=tree.shown(relpath)
            )
    return found


def _run_folders(tree: FileTree) -> list[tuple[str, str, int, str]]:
    """(eval folder, configuration, run number, prefix) for flat and run-<k> layouts."""
    cells: dict[tuple[str, str], dict[str, Any]] = defaultdict(lambda: {"flat": False, "runs": {}})
    for relpath in tree.sizes:
        parts = relpath.split("/")
        if len(parts) < 3 or not parts[0].startswith("eval-") or parts[1] == "outputs":
            continue
        cell = cells[(parts[0], parts[1])]
        if len(parts) == 3 and parts[2] in RUN_FILES:
            cell["flat"] = True
        elif len(parts) >= 4 and (m := RUN_DIR.match(parts[2])) and parts[3] in RUN_FILES:
            cell["runs"][int(m.group(1))] = f"{parts[0]}/{parts[1]}/{parts[2]}/"
    found = []
    for (eval_dir, config), cell in sorted(cells.items()):
        if cell["flat"] and cell["runs"]:
            raise ImportFailure(
                "holds both a flat run and run-<k> folders; expected one layout per cell",
                path=tree.shown(f"{eval_dir}/{config}"),
            )
        if cell["flat"]:
            found.append((eval_dir, config, 1, f"{eval_dir}/{config}/"))
        for index, prefix in sorted(cell["runs"].items()):
            found.append((eval_dir, config, index, prefix))
    return found


def _eval_id(eval_dir: str, metadata: dict[str, Any] | None) -> str:
    if metadata and metadata.get("eval_id") is not None:
        return str(metadata["eval_id"])
    return eval_dir.removeprefix("eval-")


def _read_run(
    tree: FileTree,
    eval_dir: str,
    config: str,
    run_index: int,
    prefix: str,
    metadata_by_dir: dict[str, dict[str, Any]],
) -> ParsedRun:
    metadata = metadata_by_dir.get(eval_dir)
    run = ParsedRun(
        eval_id=_eval_id(eval_dir, metadata),
        condition=config,
        run_index=run_index,
        source_relpath=prefix.rstrip("/"),
        content_hash=tree.digest(prefix),
        prompt=(metadata or {}).get("prompt") or "",
    )
    if (raw := tree.files.get(prefix + "timing.json")) is not None:
        timing = jsonfiles.load(raw, "timing", display=tree.shown(prefix + "timing.json"))
        tokens = timing.get("total_tokens")
        duration = timing.get("duration_ms")
        if duration is None and timing.get("total_duration_seconds") is not None:
            duration = timing["total_duration_seconds"] * 1000
        if not tokens and not duration:
            tokens = duration = None  # skill-creator writes zeros when it recorded nothing
        run.total_tokens = tokens
        run.duration_ms = round(duration) if duration is not None else None
        run.timing_source = "skill-creator" if tokens or duration else ""
    if (raw := tree.files.get(prefix + "grading.json")) is not None:
        display = tree.shown(prefix + "grading.json")
        data = jsonfiles.parse_json(raw, display=display)
        if isinstance(data, dict) and "assertion_results" in data and "expectations" not in data:
            jsonfiles.validate(data, "grading", display=display)
            run.grading = eval_magic_grading(data)
        else:
            jsonfiles.validate(data, "skill-creator-grading", display=display)
            run.grading = skill_creator_grading(data)
    outputs = []
    for relpath in tree.under(prefix + "outputs/"):
        entry: dict[str, Any] = {
            "path": relpath[len(prefix) + len("outputs/") :],
            "size": tree.sizes[relpath],
        }
        raw = tree.files.get(relpath)
        if raw is not None and len(raw) <= OUTPUT_PREVIEW_BYTES:
            with contextlib.suppress(UnicodeDecodeError):
                entry["text"] = raw.decode("utf-8")
        outputs.append(entry)
    if outputs:
        run.artifacts["outputs"] = outputs
    return run


def skill_creator_grading(data: dict[str, Any], *, format: str = "skill-creator") -> ParsedGrading:
    """skill-creator expectations as results; summary computed when missing or partial."""
    expectations = data.get("expectations") or []
    ids = unique_slugs([e["text"] for e in expectations])
    results = [
        ParsedResult(
            assertion_id=slug,
            passed=e["passed"],
            evidence=e.get("evidence") or "",
            grader="llm_judge",
            text=e["text"],
        )
        for slug, e in zip(ids, expectations, strict=True)
    ]
    passed = sum(1 for r in results if r.passed)
    total = len(results)
    summary = data.get("summary") or {}
    computed = not {"passed", "failed", "total", "pass_rate"} <= set(summary)
    if computed:
        summary = {
            "passed": passed,
            "failed": total - passed,
            "total": total,
            "pass_rate": passed / total if total else 0.0,
        }
    extra = {
        k: data[k]
        for k in ("execution_metrics", "timing", "claims", "user_notes_summary", "eval_feedback")
        if k in data
    }
    return ParsedGrading(
        format=format,
        passed=summary["passed"],
        failed=summary["failed"],
        total=summary["total"],
        pass_rate=float(summary["pass_rate"]),
        summary_computed=computed,
        results=results,
        extra=extra,
    )


def _runs_from_benchmark(benchmark: dict[str, Any], *, display: str) -> list[ParsedRun]:
    runs = []
    seen = set()
    for index, entry in enumerate(benchmark["runs"]):
        try:
            run_number = int(entry.get("run_number") or 1)
        except ValueError:
            raise ImportFailure(
                f"run_number must be an integer, got {entry['run_number']!r}",
                path=display,
                pointer=f"/runs/{index}/run_number",
            ) from None
        key = (str(entry["eval_id"]), entry["configuration"], run_number)
        if key in seen:
            raise ImportFailure(
                f"duplicate run {key[0]}/{key[1]}/run-{key[2]}",
                path=display,
                pointer=f"/runs/{index}",
            )
        seen.add(key)
        result = entry.get("result") or {}
        grading = skill_creator_grading(
            {"expectations": entry.get("expectations") or []}, format="benchmark"
        )
        if result.get("total") is not None and result.get("passed") is not None:
            # The recorded per-run result is what skill-creator graded; keep it.
            grading.passed, grading.total = result["passed"], result["total"]
            grading.failed = result.get("failed", result["total"] - result["passed"])
            grading.pass_rate = float(
                result.get("pass_rate")
                if result.get("pass_rate") is not None
                else (result["passed"] / result["total"] if result["total"] else 0.0)
            )
            grading.summary_computed = False
        seconds, tokens = result.get("time_seconds"), result.get("tokens")
        if not seconds and not tokens:
            seconds = tokens = None
        runs.append(
            ParsedRun(
                eval_id=key[0],
                condition=key[1],
                run_index=run_number,
                source_relpath=f"benchmark.json#/runs/{index}",
                content_hash=fingerprint({"entry": entry}),
                total_tokens=tokens,
                duration_ms=round(seconds * 1000) if seconds is not None else None,
                timing_source="benchmark" if seconds or tokens else "",
                grading=grading,
                artifacts={"notes": entry["notes"]} if entry.get("notes") else {},
            )
        )
    return runs


def _definitions(
    runs: list[ParsedRun],
    metadata_by_dir: dict[str, dict[str, Any]],
    known: dict[str, EvalDefinition],
) -> dict[str, EvalDefinition]:
    by_id = {_eval_id(d, m): (d, m) for d, m in metadata_by_dir.items()}
    graded_by_eval: dict[str, set[str]] = defaultdict(set)
    for run in runs:
        if run.grading:
            graded_by_eval[run.eval_id] |= {r.assertion_id for r in run.grading.results}
    resolved: dict[str, EvalDefinition] = {}
    for run in runs:
        if run.eval_id in resolved:
            continue
        graded = graded_by_eval[run.eval_id]
        if run.eval_id in by_id:
            eval_dir, metadata = by_id[run.eval_id]
            assertions = case_assertions(metadata)
            resolved[run.eval_id] = EvalDefinition(
                eval_id=run.eval_id,
                definition=metadata,
                origin="eval_metadata.json",
                dialect="skill-creator",
                name=str(metadata.get("eval_name") or eval_dir.removeprefix("eval-")),
                prompt=metadata.get("prompt") or "",
                assertions=assertions,
                skill_should_trigger=(
                    known[run.eval_id].skill_should_trigger if run.eval_id in known else True
                ),
            )
            continue
        definition = known.get(run.eval_id)
        if definition and matches_what_ran(definition, prompt=run.prompt, assertion_ids=graded):
            resolved[run.eval_id] = definition
        else:
            resolved[run.eval_id] = reconstructed_definition(
                run.eval_id, prompt=run.prompt, assertion_ids=graded, like=definition
            )
    return resolved
