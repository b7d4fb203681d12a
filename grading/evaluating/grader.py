"""Grading a finished run with the graders in `grading/graders`, writing grading.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading.anthropic_client import MessagesClient
from grading.graders.grade import grade_run

from .plan import ConditionPlan, EvalPlan, Plan, RunPlan


@dataclass
class Graded:
    passed: int
    total: int
    calls: int
    tokens: int


def grade(
    *,
    client: MessagesClient,
    plan: Plan,
    case: EvalPlan,
    condition: ConditionPlan,
    run: RunPlan,
    record: dict[str, Any],
    task_folder: Path,
    baseline_commit: str,
    staging: Path,
    command_timeout: float,
) -> Graded:
    """Grade the run in `staging` (run.json + conversation.json there) and write grading.json.

    Raises grading.graders.judge.JudgeUnavailable when a judge call fails after retries.
    """
    conversation = json.loads((staging / "conversation.json").read_text(encoding="utf-8"))
    grading = grade_run(
        run={**record, "conversation": conversation},
        assertions=case.assertions,
        task_dir=task_folder,
        evals_dir=plan.skill_dir / "evals",
        skill_name=plan.skill.name,
        skill_loaded=condition.skill is not None,
        skill_should_trigger=case.skill_should_trigger,
        client=client,
        judge_model=plan.judge_model,
        run_dir=staging,
        command_timeout=command_timeout,
        baseline=baseline_commit,
    )
    (staging / "grading.json").write_text(
        json.dumps(grading, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    calls = tokens = 0
    for response in sorted((staging / "judge-responses").glob("*.json")):
        usage = json.loads(response.read_text(encoding="utf-8")).get("usage") or {}
        calls += 1
        tokens += sum(v for v in usage.values() if isinstance(v, int))
    summary = grading["summary"]
    return Graded(summary["passed"], summary["total"], calls, tokens)
