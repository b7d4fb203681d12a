"""skill-creator's gradings, the runs a lone benchmark.json lists, and the eval
definitions rebuilt from its eval_metadata.json files (the reader is skill_creator.py)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from runs.assertions import case_assertions, unique_slugs

from .definitions import matches_what_ran
from .errors import ImportFailure
from .eval_magic import reconstructed_definition
from .records import (
    EvalDefinition,
    ParsedGrading,
    ParsedResult,
    ParsedRun,
    fingerprint,
)


def eval_id_of(eval_dir: str, metadata: dict[str, Any] | None) -> str:
    if metadata and metadata.get("eval_id") is not None:
        return str(metadata["eval_id"])
    return eval_dir.split("/")[-1].removeprefix("eval-")


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
) -> dict[str, EvalDefinition]:
    by_id = {eval_id_of(d, m): (d, m) for d, m in metadata_by_dir.items()}
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
