"""Grade one run: every assertion of its eval, in order, into a grading.json.

The diff is measured first, before any `command_check` copies its setup files into the
task folder or its command changes it, so `diff_scope` sees only what the agent did.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anthropic

from .command import DEFAULT_TIMEOUT_SECONDS, command_check
from .diff import PATCH_NAME, DiffError, DiffMeasurement, diff_scope, measure_diff
from .expectations import judge_rubric
from .judge import llm_judge
from .meta import skill_check_applies, skill_invoked_check
from .transcript import transcript_check


def grade_run(
    *,
    run: Mapping[str, Any],
    assertions: Sequence[Mapping[str, Any]],
    task_dir: Path | None,
    evals_dir: Path | None = None,
    skill_name: str | None = None,
    skill_loaded: bool = False,
    skill_should_trigger: bool | None = True,
    client: anthropic.Anthropic | None = None,
    judge_model: str | None = None,
    run_dir: Path | None = None,
    command_timeout: float = DEFAULT_TIMEOUT_SECONDS,
    baseline: str | None = None,
) -> dict[str, Any]:
    """grading.json for one run, valid against grading.schema.json.

    `run` is run.json (with its conversation); `assertions` the eval's, normalised by
    `case_assertions` (or the importer); `task_dir` the run's git task folder, None for
    an imported run without one (its command and diff checks then fail, saying so). With
    `run_dir`, the side files eval-magic keeps beside run.json are written there:
    diff-scope.json and diff.patch (always, when the task folder can be measured),
    command-checks/<id>.json and judge-responses/<id>.json. grading.json itself is the
    caller's to write. Raises JudgeUnavailable when a judge call fails after retries.
    """
    measurement: DiffMeasurement | None = None
    diff_problem = ""
    wants_diff = run_dir is not None or any(a.get("type") == "diff_scope" for a in assertions)
    if task_dir is not None and wants_diff:
        try:
            measurement = measure_diff(task_dir, baseline=baseline)
        except DiffError as exc:
            diff_problem = str(exc)
        if measurement is not None and run_dir is not None:
            _write_json(run_dir / "diff-scope.json", measurement.record)
            (run_dir / PATCH_NAME).write_text(measurement.patch, encoding="utf-8")

    results = []
    for assertion in assertions:
        kind = assertion.get("type")
        assertion_id = str(assertion.get("id", ""))
        if kind == "transcript_check":
            result = transcript_check(run, assertion)
        elif kind == "llm_judge":
            outcome = llm_judge(run, assertion, client=client, judge_model=judge_model)
            result = outcome.result
            if run_dir is not None:
                artifact = outcome.artifact(judge_rubric(assertion))
                _write_json(run_dir / "judge-responses" / _filename(assertion_id), artifact)
        elif kind == "command_check" and task_dir is not None:
            result, record = command_check(
                assertion, task_dir=task_dir, evals_dir=evals_dir, timeout=command_timeout
            )
            if run_dir is not None:
                _write_json(run_dir / "command-checks" / _filename(assertion_id), record)
        elif kind == "diff_scope" and measurement is not None:
            result, _ = diff_scope(assertion, measurement=measurement)
        elif kind in ("command_check", "diff_scope"):
            why = diff_problem or "the run has no task folder"
            result = {
                "id": assertion_id,
                "passed": False,
                "evidence": f"could not check: {why}",
                "confidence": 0.0,
                "grader": kind,
            }
        else:
            result = {
                "id": assertion_id,
                "passed": False,
                "evidence": f"unknown assertion type {kind!r}",
                "confidence": 0.0,
            }
        results.append(result)

    grading: dict[str, Any] = {"assertion_results": results, "summary": summarise(results)}
    if skill_name and skill_check_applies(
        skill_loaded=skill_loaded, skill_should_trigger=skill_should_trigger
    ):
        meta = skill_invoked_check(run, skill_name=skill_name)
        grading["meta_results"] = [meta]
        grading["meta_summary"] = {**summarise([meta], rate=False), "skill_invoked": meta["passed"]}
    return grading


def summarise(results: Sequence[Mapping[str, Any]], *, rate: bool = True) -> dict[str, Any]:
    """{passed, failed, total, pass_rate}; pass_rate 0 when there is nothing to grade."""
    passed = sum(1 for r in results if r["passed"])
    summary: dict[str, Any] = {
        "passed": passed,
        "failed": len(results) - passed,
        "total": len(results),
    }
    if rate:
        summary["pass_rate"] = passed / len(results) if results else 0.0
    return summary


def _filename(assertion_id: str) -> str:
    """`<id>.json`, the id made safe as one path component."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", assertion_id).strip(".") or "assertion"
    return f"{safe}.json"


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
