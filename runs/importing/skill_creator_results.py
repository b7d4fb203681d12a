"""skill-creator's gradings and timings, eval ids, the runs a lone benchmark.json lists, the
reviews of feedback.json, and the eval definitions rebuilt from its eval_metadata.json files
(the reader, which walks the folders, is skill_creator.py)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from runs.case_assertions import case_assertions, unique_slugs
from runs.warnings import ValidityWarning

from . import jsonfiles
from .definitions import matches_what_ran
from .errors import ImportFailure
from .eval_magic import eval_magic_grading, parse_timestamp, reconstructed_definition
from .records import (
    EvalDefinition,
    ParsedGrading,
    ParsedResult,
    ParsedReview,
    ParsedRun,
    fingerprint,
)
from .skill_creator_tolerance import Tolerated
from .tree import FileTree
from .walk import natural_key


def eval_id_of(eval_dir: str, metadata: dict[str, Any] | None) -> str:
    if metadata and metadata.get("eval_id") is not None:
        return str(metadata["eval_id"])
    return eval_dir.split("/")[-1].removeprefix("eval-")


def eval_ids(
    eval_dirs: list[str],
    metadata_by_dir: dict[str, dict[str, Any]],
    notices: list[ValidityWarning],
) -> dict[str, str]:
    """Each eval folder's eval id. Folders sharing one hold one eval when their prompts are
    the same, else distinct evals: the first keeps the id, a later one is `<id>@<folder>`."""
    by_id: dict[str, list[str]] = {}
    for eval_dir in eval_dirs:
        by_id.setdefault(eval_id_of(eval_dir, metadata_by_dir.get(eval_dir)), []).append(eval_dir)
    ids: dict[str, str] = {}
    for eval_id, dirs in by_id.items():
        # Folders with the same prompt, in folder order; a folder without one is alone.
        same: dict[str, list[str]] = {}
        for eval_dir in dirs:
            prompt = (metadata_by_dir.get(eval_dir) or {}).get("prompt")
            key = " ".join(prompt.split()) if isinstance(prompt, str) else ""
            same.setdefault(key or f"\0{eval_dir}", []).append(eval_dir)
        for position, members in enumerate(same.values()):
            given = eval_id if position == 0 else f"{eval_id}@{members[0].split('/')[-1]}"
            ids.update(dict.fromkeys(members, given))
            if len(members) > 1:
                params = {"eval_id": given, "folders": [f"{d}/" for d in members]}
                notices.append(ValidityWarning("eval-folders-merged", params))
        if len(same) > 1:
            params = {
                "eval_id": eval_id,
                "folders": [f"{d}/" for d in dirs],
                "ids": list(dict.fromkeys(ids[d] for d in dirs)),
            }
            notices.append(ValidityWarning("eval-id-shared", params))
    return ids


def expectations_by_eval(
    expectations: list[dict[str, Any]], *, default: str
) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for expectation in expectations:
        eval_id = expectation.get("eval_id")
        key = default if eval_id is None or eval_id == "" else str(eval_id)
        grouped.setdefault(key, []).append(expectation)
    return grouped


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
    return ParsedGrading.from_summary(
        summary, format=format, summary_computed=computed, results=results, extra=extra
    )


def read_timing(run: ParsedRun, timing: dict[str, Any]) -> None:
    tokens = timing.get("total_tokens")
    duration = timing.get("duration_ms")
    if not duration and timing.get("total_duration_seconds"):
        duration = timing["total_duration_seconds"] * 1000
    # skill-creator writes zeros for what it did not record: 0 tokens is never a
    # measurement (a run that ran used tokens), 0 ms with 0 tokens neither.
    tokens = tokens or None
    duration = duration if duration or tokens else None
    run.total_tokens = tokens
    run.duration_ms = round(duration) if duration is not None else None
    run.timing_source = "skill-creator" if tokens or duration else ""


def read_grading(
    run: ParsedRun, tree: FileTree, relpath: str, tolerated: Tolerated
) -> dict[str, list[dict[str, Any]]]:
    """Set the run's grading (skill-creator's, or eval-magic's format); its expectations by
    the eval they name, when they name one."""
    display = tree.shown(relpath)
    data = tree.json(relpath)
    if isinstance(data, dict) and "assertion_results" in data and "expectations" not in data:
        jsonfiles.validate(data, "grading", display=display)
        run.grading = eval_magic_grading(data)
        return {}
    data = tolerated.validated(data, "skill-creator-grading", display=display)
    run.grading = skill_creator_grading(data)
    return expectations_by_eval(data["expectations"], default=run.eval_id)


def reviews(feedback: dict[str, Any], *, display: str) -> list[ParsedReview]:
    """feedback.json's reviews that say something (the viewer saves an empty one per run)."""
    return [
        ParsedReview(
            run_relpath_key=review["run_id"],
            text=review["feedback"],
            created_at=parse_timestamp(
                review.get("timestamp"), display=display, pointer=f"/reviews/{index}/timestamp"
            ),
        )
        for index, review in enumerate(feedback.get("reviews") or [])
        if (review.get("feedback") or "").strip()
    ]


def runs_from_benchmark(benchmark: dict[str, Any], *, display: str) -> list[ParsedRun]:
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
        tokens = tokens or None  # zeros are what skill-creator writes when it recorded nothing
        seconds = seconds if seconds or tokens else None
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


def rebuilt_definitions(
    runs: list[ParsedRun],
    metadata_by_dir: dict[str, dict[str, Any]],
    known: dict[str, EvalDefinition],
    *,
    ids: dict[str, str],
) -> dict[str, EvalDefinition]:
    """Each eval's definition: from its eval_metadata.json (the first folder's, where two
    folders hold one eval; `ids` is each folder's eval id), else evals.json's when it
    matches what ran, else reconstructed from the runs."""
    by_id: dict[str, tuple[str, dict[str, Any]]] = {}
    for eval_dir, metadata in metadata_by_dir.items():
        by_id.setdefault(ids.get(eval_dir) or eval_id_of(eval_dir, metadata), (eval_dir, metadata))
    candidates: dict[str, EvalDefinition] = {}
    for eval_id, (eval_dir, metadata) in by_id.items():
        like = known.get(eval_id)
        same_prompt = (
            like is not None and like.prompt.strip() == (metadata.get("prompt") or "").strip()
        )
        candidates[eval_id] = EvalDefinition(
            eval_id=eval_id,
            definition=metadata,
            origin="eval_metadata.json",
            dialect="skill-creator",
            name=str(metadata.get("eval_name") or eval_dir.split("/")[-1].removeprefix("eval-")),
            prompt=metadata.get("prompt") or "",
            # skill-creator copies no expected_output into eval_metadata.json, but a
            # hand-written one may carry it; else evals.json's, for the same prompt.
            expected_output=_text(metadata.get("expected_output"))
            or (like.expected_output if like and same_prompt else ""),
            assertions=case_assertions(metadata),
            skill_should_trigger=like.skill_should_trigger if like else True,
        )
    for eval_id, definition in known.items():
        candidates.setdefault(eval_id, definition)
    _align_result_ids(runs, candidates)

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
            resolved[run.eval_id] = candidates[run.eval_id]
            continue
        definition = known.get(run.eval_id)
        if definition and matches_what_ran(definition, prompt=run.prompt, assertion_ids=graded):
            resolved[run.eval_id] = definition
        else:
            resolved[run.eval_id] = reconstructed_definition(
                run.eval_id, prompt=run.prompt, assertion_ids=graded, like=definition
            )
    return resolved


def _align_result_ids(runs: list[ParsedRun], definitions: dict[str, EvalDefinition]) -> None:
    """Give each result the id of the definition's assertion it grades.

    Results carry only the expectation's text, slugged into an id; a definition's assertion
    object may be `{name, description}` or `{id, text}`. Where the text is the assertion's
    text, description or name, the result takes the assertion's id, so both sides agree.
    """
    lookups: dict[str, tuple[set[str], dict[str, str]]] = {}
    for run in runs:
        definition = definitions.get(run.eval_id)
        if run.grading is None or definition is None:
            continue
        if run.eval_id not in lookups:
            by_text: dict[str, str] = {}
            for assertion in definition.assertions:
                for key in ("text", "description", "name", "rubric"):
                    value = assertion.get(key)
                    if isinstance(value, str) and value.strip():
                        by_text.setdefault(_norm(value), assertion["id"])
            lookups[run.eval_id] = ({a["id"] for a in definition.assertions}, by_text)
        ids, by_text = lookups[run.eval_id]
        if all(r.assertion_id in ids for r in run.grading.results):
            continue
        taken = {r.assertion_id for r in run.grading.results}
        for result in run.grading.results:
            found = by_text.get(_norm(result.text)) if result.assertion_id not in ids else None
            if found and found not in taken:  # never two results under one id
                taken.discard(result.assertion_id)
                result.assertion_id = found
                taken.add(found)


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def cells_only_in_benchmark(
    runs: list[ParsedRun],
    benchmark: dict[str, Any],
    tree: FileTree,
    notices: list[ValidityWarning],
) -> list[ParsedRun]:
    """The benchmark's runs of configurations no folder holds: an author who kept only one
    configuration's folders (the other's runs live only in benchmark.json) still gets the
    comparison the benchmark made. Only where the benchmark's eval ids are the folders' own
    (else its runs cannot be put beside them), and never for a configuration with folders."""
    folder_configs = {run.condition for run in runs}
    entries = benchmark["runs"]
    # Checked on the raw entries first: where every configuration has folders (the usual
    # case), the benchmark's 6,000 runs are not built into gradings only to be dropped.
    if all(entry.get("configuration") in folder_configs for entry in entries):
        return []
    listed = runs_from_benchmark(benchmark, display=tree.shown("benchmark.json"))
    extra = [run for run in listed if run.condition not in folder_configs]
    shown = tree.shown("benchmark.json")
    configs = sorted({run.condition for run in extra})
    folder_ids = {run.eval_id for run in runs}
    listed_ids = {run.eval_id for run in listed if run.condition in folder_configs}
    if not folder_ids <= listed_ids:
        params = {"file": shown, "configurations": configs, "ids": sorted(folder_ids - listed_ids)}
        notices.append(ValidityWarning("benchmark-runs-unplaced", params))
        return []
    cells = sorted({f"{run.eval_id}/{run.condition}" for run in extra}, key=natural_key)
    notices.append(
        ValidityWarning("benchmark-only-runs", {"n": len(extra), "file": shown, "cells": cells})
    )
    return extra


def metadata_file(tree: FileTree, eval_dir: str) -> str | None:
    """The eval's eval_metadata.json: in its folder, else (as some authors keep it) in the
    first of its configuration folders that holds one."""
    if f"{eval_dir}/eval_metadata.json" in tree.files:
        return f"{eval_dir}/eval_metadata.json"
    for relpath in tree.under(f"{eval_dir}/"):
        parts = relpath.split("/")
        if len(parts) == len(eval_dir.split("/")) + 2 and parts[-1] == "eval_metadata.json":
            return relpath
    return None
