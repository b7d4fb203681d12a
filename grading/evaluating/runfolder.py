"""One run's folder as eval-magic lays it out, written by the runner as the run goes.

run.json and conversation.json from what the agent did, grading.json from the graders
(`grading.graders.grade.grade_run` decides; here its verdicts are written down and the
judge's cost is counted from its side files), or error.json when the run errored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from grading.anthropic_client import MessagesClient
from grading.graders.grade import grade_run
from runs import pricing

from .harness import AgentResult
from .plan import ConditionPlan, EvalPlan, Plan, RunPlan


def write_run(
    staging: Path,
    *,
    run: RunPlan,
    case: EvalPlan,
    condition: ConditionPlan,
    env: Path,
    agent: AgentResult,
) -> None:
    """run.json and conversation.json: the agent's side of the run."""
    root = env.resolve()
    record: dict[str, Any] = {
        "eval_id": run.eval_id,
        "condition": run.condition,
        "skill_path": condition.skill.path if condition.skill else None,
        "prompt": case.case["prompt"],
        "files": [str(root / destination) for _, destination in case.fixtures],
        "final_message": agent.final_message,
        "tool_invocations": agent.tool_invocations,
        "total_tokens": None,
        "duration_ms": None,
    }
    if run.multi:
        record["run_index"] = run.run_index
    write_json(staging / "run.json", record)
    write_json(staging / "conversation.json", agent.conversation())


@dataclass
class Graded:
    passed: int
    total: int
    calls: int
    tokens: int
    #: What the judge calls cost at their models' prices; None when one has no price.
    cost_usd: float | None = 0.0


def grade_run_folder(
    staging: Path,
    *,
    client: MessagesClient,
    plan: Plan,
    case: EvalPlan,
    condition: ConditionPlan,
    task_folder: Path,
    baseline_commit: str,
    command_timeout: float,
    skill_observable: bool = True,
) -> Graded:
    """Grade the run in `staging` (run.json + conversation.json there) and write grading.json.

    Raises grading.graders.judge.JudgeUnavailable when a judge call fails after retries.
    """
    record = json.loads((staging / "run.json").read_text(encoding="utf-8"))
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
        skill_observable=skill_observable,
    )
    write_json(staging / "grading.json", grading)
    calls = tokens = 0
    cost: float | None = 0.0
    for response in sorted((staging / "judge-responses").glob("*.json")):
        data = json.loads(response.read_text(encoding="utf-8"))
        usage = data.get("usage") or {}
        calls += 1
        tokens += sum(v for v in usage.values() if isinstance(v, int))
        price = pricing.price_of(str(data.get("model") or plan.judge_model))
        if price is None or cost is None:
            cost = None
            continue
        cost += pricing.cost_usd(price, pricing.tokens_of_usage(usage))
    summary = grading["summary"]
    return Graded(summary["passed"], summary["total"], calls, tokens, cost)


def write_error(folder: Path, error: str, kind: str, *, calls: int = 0) -> None:
    """The run's error.json: it is imported as errored, kept out of pass rates."""
    write_json(
        folder / "error.json", {"error": error, "type": kind, "api_calls": calls, "at": now()}
    )


def now() -> str:
    """The time as eval-magic's files record it (UTC, milliseconds, `Z`)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
