"""Grade one run: every assertion of its eval, in order, into a grading.json.

The diff is measured first, before any `command_check` copies its setup files into the
task folder or its command changes it, so `diff_scope` sees only what the agent did. The
graders that read only the transcript (`llm_judge`, `transcript_check`) decide while it is
being measured: a judge waits seconds on the API, git's work hides behind that wait.
Each assertion kind has one grader in `GRADERS`; a kind without one fails, saying so.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading.anthropic_client import MessagesClient
from runs.case_assertions import judge_rubric

from .command import DEFAULT_TIMEOUT_SECONDS, command_check
from .diff import PATCH_NAME, DiffError, DiffMeasurement, diff_scope, measure_diff
from .judge import llm_judge
from .meta import skill_check_applies, skill_invoked_check
from .transcript import transcript_check
from .verdict import Verdict


@dataclass(frozen=True)
class RunContext:
    """What the graders of one run share besides run.json: its folders, judge and diff."""

    task_dir: Path | None
    evals_dir: Path | None
    run_dir: Path | None
    client: MessagesClient | None
    judge_model: str | None
    command_timeout: float
    measurement: DiffMeasurement | None
    #: Why the diff could not be measured ('' when it was, or was not wanted).
    diff_problem: str

    def write_side_file(self, folder: str, assertion_id: str, data: Any) -> None:
        """`<run_dir>/<folder>/<id>.json`, eval-magic's side record, when there is a run_dir."""
        if self.run_dir is not None:
            _write_json(self.run_dir / folder / _filename(assertion_id), data)


Grader = Callable[[Mapping[str, Any], Mapping[str, Any], RunContext], Verdict]
#: Assertion kind (`type` in evals.json) → the grader that decides it.
GRADERS: dict[str, Grader] = {}


def grader(kind: str) -> Callable[[Grader], Grader]:
    """Register the decorated function as the grader of assertions of `kind`."""

    def register(function: Grader) -> Grader:
        GRADERS[kind] = function
        return function

    return register


@grader("transcript_check")
def _transcript(run: Mapping[str, Any], assertion: Mapping[str, Any], ctx: RunContext) -> Verdict:
    return transcript_check(run, assertion)


@grader("llm_judge")
def _judge(run: Mapping[str, Any], assertion: Mapping[str, Any], ctx: RunContext) -> Verdict:
    outcome = llm_judge(run, assertion, client=ctx.client, judge_model=ctx.judge_model)
    ctx.write_side_file(
        "judge-responses", outcome.result.id, outcome.artifact(judge_rubric(assertion))
    )
    return outcome.result


@grader("command_check")
def _command(run: Mapping[str, Any], assertion: Mapping[str, Any], ctx: RunContext) -> Verdict:
    if ctx.task_dir is None:
        return _not_checkable(assertion, ctx)
    verdict, record = command_check(
        assertion, task_dir=ctx.task_dir, evals_dir=ctx.evals_dir, timeout=ctx.command_timeout
    )
    ctx.write_side_file("command-checks", verdict.id, record)
    return verdict


@grader("diff_scope")
def _diff(run: Mapping[str, Any], assertion: Mapping[str, Any], ctx: RunContext) -> Verdict:
    if ctx.measurement is None:
        return _not_checkable(assertion, ctx)
    verdict, _ = diff_scope(assertion, measurement=ctx.measurement)
    return verdict


def _not_checkable(assertion: Mapping[str, Any], ctx: RunContext) -> Verdict:
    """FAIL, confidence 0 (a person should look): the check needs what the run lacks."""
    why = ctx.diff_problem or "the run has no task folder"
    kind = str(assertion.get("type"))
    return Verdict(
        str(assertion.get("id", "")),
        False,
        f"could not check: {why}",
        confidence=0.0,
        grader=kind,
    )


def grade_run(
    *,
    run: Mapping[str, Any],
    assertions: Sequence[Mapping[str, Any]],
    task_dir: Path | None,
    evals_dir: Path | None = None,
    skill_name: str | None = None,
    skill_loaded: bool = False,
    skill_should_trigger: bool | None = True,
    client: MessagesClient | None = None,
    judge_model: str | None = None,
    run_dir: Path | None = None,
    command_timeout: float = DEFAULT_TIMEOUT_SECONDS,
    baseline: str | None = None,
    skill_observable: bool = True,
) -> dict[str, Any]:
    """grading.json for one run, valid against grading.schema.json.

    `skill_observable=False` (a harness without a skill tool) leaves `__skill_invoked` out:
    whether the skill was used cannot be read from the transcript, and is not guessed.

    `run` is run.json (with its conversation); `assertions` the eval's, normalised by
    `case_assertions` (or the importer); `task_dir` the run's git task folder, None for
    an imported run without one (its command and diff checks then fail, saying so). With
    `run_dir`, the side files eval-magic keeps beside run.json are written there:
    diff-scope.json and diff.patch (always, when the task folder can be measured),
    command-checks/<id>.json and judge-responses/<id>.json. grading.json itself is the
    caller's to write. Raises JudgeUnavailable when a judge call fails after retries.
    """
    wants_diff = run_dir is not None or any(a.get("type") == "diff_scope" for a in assertions)
    ctx = RunContext(
        task_dir=task_dir,
        evals_dir=evals_dir,
        run_dir=run_dir,
        client=client,
        judge_model=judge_model,
        command_timeout=command_timeout,
        measurement=None,
        diff_problem="",
    )
    verdicts: dict[int, Verdict] = {}
    with ThreadPoolExecutor(1, thread_name_prefix="measure-diff") as pool:
        measuring = (
            pool.submit(_measure, task_dir, baseline, run_dir)
            if task_dir is not None and wants_diff
            else None
        )
        for index, assertion in enumerate(assertions):
            if assertion.get("type") in TRANSCRIPT_ONLY:
                verdicts[index] = grade_assertion(run, assertion, ctx)
        if measuring is not None:
            measurement, problem = measuring.result()
            ctx = dataclasses.replace(ctx, measurement=measurement, diff_problem=problem)
    for index, assertion in enumerate(assertions):
        if index not in verdicts:  # in order: each command_check after the diff
            verdicts[index] = grade_assertion(run, assertion, ctx)
    results = [verdicts[index].as_json() for index in range(len(assertions))]
    grading: dict[str, Any] = {"assertion_results": results, "summary": summarise(results)}
    if (
        skill_name
        and skill_observable
        and skill_check_applies(
            skill_loaded=skill_loaded, skill_should_trigger=skill_should_trigger
        )
    ):
        meta = skill_invoked_check(run, skill_name=skill_name).as_json()
        grading["meta_results"] = [meta]
        grading["meta_summary"] = {**summarise([meta], rate=False), "skill_invoked": meta["passed"]}
    return grading


#: Kinds whose graders read run.json only, never the task folder.
TRANSCRIPT_ONLY = frozenset({"llm_judge", "transcript_check"})


def _measure(
    task_dir: Path, baseline: str | None, run_dir: Path | None
) -> tuple[DiffMeasurement | None, str]:
    """The task folder's diff (and its side files in run_dir), or why it has none."""
    try:
        measurement = measure_diff(task_dir, baseline=baseline)
    except DiffError as exc:
        return None, str(exc)
    if run_dir is not None:
        _write_json(run_dir / "diff-scope.json", measurement.record)
        (run_dir / PATCH_NAME).write_text(measurement.patch, encoding="utf-8")
    return measurement, ""


def grade_assertion(
    run: Mapping[str, Any], assertion: Mapping[str, Any], ctx: RunContext
) -> Verdict:
    """The verdict of the grader registered for the assertion's kind."""
    kind = assertion.get("type")
    grade = GRADERS.get(kind) if isinstance(kind, str) else None
    if grade is None:
        assertion_id = str(assertion.get("id", ""))
        return Verdict(assertion_id, False, f"unknown assertion type {kind!r}", confidence=0.0)
    return grade(run, assertion, ctx)


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
