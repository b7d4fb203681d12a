"""Small builders that write result folders the way eval-magic and skill-creator do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: An eval-magic eval with every assertion kind, for runevals through either harness.
WRITE_NOTES_EVAL: dict[str, Any] = {
    "id": "write-notes",
    "prompt": "Write notes.md summarising README.md.",
    "expected_output": "notes.md exists and summarises the README.",
    "files": ["fixtures/README.md"],
    "assertions": [
        {
            "id": "read-first",
            "type": "transcript_check",
            "check": "tool_invocation_matches",
            "pattern": "Read .*README",
            "must_precede": "first_write",
        },
        {"id": "good-summary", "type": "llm_judge", "rubric": "Is notes.md a summary?"},
        {"id": "notes-exist", "type": "command_check", "command": "test -f notes.md"},
        {"id": "small", "type": "diff_scope", "max_files_touched": 1},
    ],
}


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def grading(results: dict[str, bool], *, skill_invoked: bool | None = None) -> dict[str, Any]:
    """An eval-magic grading.json; a meta check is added when skill_invoked is not None."""
    passed = sum(results.values())
    data: dict[str, Any] = {
        "assertion_results": [
            {
                "id": assertion_id,
                "passed": ok,
                "evidence": f"evidence for {assertion_id}",
                "confidence": 1.0,
                "grader": "llm_judge",
            }
            for assertion_id, ok in results.items()
        ],
        "summary": {
            "passed": passed,
            "failed": len(results) - passed,
            "total": len(results),
            "pass_rate": passed / len(results) if results else 0,
        },
    }
    if skill_invoked is not None:
        data["meta_results"] = [
            {
                "id": "__skill_invoked",
                "passed": skill_invoked,
                "evidence": "Skill invocation verified from transcript."
                if skill_invoked
                else "No skill invocation found in transcript across 2 transcript invocation(s).",
                "confidence": 1.0,
                "grader": "transcript_check",
            }
        ]
        data["meta_summary"] = {
            "passed": int(skill_invoked),
            "failed": int(not skill_invoked),
            "total": 1,
            "skill_invoked": skill_invoked,
        }
    return data


def run_record(eval_id: str, condition: str, *, prompt: str = "Do the task.") -> dict[str, Any]:
    return {
        "eval_id": eval_id,
        "condition": condition,
        "skill_path": None if condition == "without_skill" else "/skills/demo/SKILL.md",
        "prompt": prompt,
        "files": [],
        "final_message": f"Done with {eval_id}.",
        "tool_invocations": [
            {"name": "Read", "args": {"file_path": "README.md"}, "ordinal": 1, "result": "hi"}
        ],
        "total_tokens": None,
        "duration_ms": None,
    }


def conversation(final: str = "Done.") -> dict[str, Any]:
    return {
        "status": "completed",
        "delivered_followups": 0,
        "events": [
            {"type": "user_message", "ordinal": 0, "round": 1, "text": "Do the task."},
            {
                "type": "tool_invocation",
                "ordinal": 1,
                "round": 1,
                "name": "Read",
                "args": {"file_path": "README.md"},
                "result": "hi",
            },
            {"type": "assistant_message", "ordinal": 2, "round": 1, "text": final},
        ],
    }


def eval_magic_iteration(
    root: Path,
    *,
    skill: str = "demo-skill",
    label: str = "iteration-1",
    mode: str = "new-skill",
    timestamp: str = "2026-05-01T10:00:00Z",
    cells: dict[tuple[str, str], list[dict[str, bool] | None]] | None = None,
    conditions: list[str] | None = None,
) -> Path:
    """Write `<root>/<skill>/<label>/` with one run folder per entry of `cells`.

    `cells` maps (eval id, condition) to the assertion results of each run; None writes a
    run without grading.json. One run is written flat, more as run-1, run-2…
    """
    conditions = conditions or (
        ["with_skill", "without_skill"] if mode == "new-skill" else ["old_skill", "new_skill"]
    )
    cells = cells or {
        ("alpha", conditions[0]): [{"a1": True, "a2": True}],
        ("alpha", conditions[1]): [{"a1": True, "a2": False}],
    }
    folder = root / skill / label
    write_json(
        folder / "conditions.json",
        {
            "mode": mode,
            "conditions": [
                {
                    "name": name,
                    "skill_path": None if name == "without_skill" else f"/skills/{skill}",
                    "staged_skill_slug": f"{skill}-{name}",
                }
                for name in conditions
            ],
            "timestamp": timestamp,
            "harness": "claude-code",
            "runs": 1,
            "agent_model": "claude-haiku-4-5",
            "judge_model": "claude-sonnet-4-6",
            "label": "demo",
        },
    )
    for (eval_id, condition), runs in cells.items():
        for index, results in enumerate(runs, start=1):
            run_dir = folder / f"eval-{eval_id}" / condition
            if len(runs) > 1:
                run_dir = run_dir / f"run-{index}"
            write_json(run_dir / "run.json", run_record(eval_id, condition))
            write_json(run_dir / "conversation.json", conversation())
            write_json(
                run_dir / "timing.json",
                {"total_tokens": 1000 + index, "duration_ms": 2000, "source": "completion-event"},
            )
            if results is not None:
                loads = condition != "without_skill"
                write_json(
                    run_dir / "grading.json",
                    grading(results, skill_invoked=True if loads else None),
                )
    return folder


def skill_folder(
    root: Path, *, name: str = "demo-skill", evals: list[dict[str, Any]] | None = None
) -> Path:
    """A skill folder with SKILL.md and an eval-magic evals.json."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Use when testing evalsite.\n---\n\n# {name}\n",
        encoding="utf-8",
    )
    evals = evals or [
        {
            "id": "alpha",
            "prompt": "Do the task.",
            "expected_output": "The task is done.",
            "assertions": [
                {"id": "a1", "type": "llm_judge", "rubric": "Is it done?"},
                {
                    "id": "a2",
                    "type": "transcript_check",
                    "check": "tool_invocation_matches",
                    "pattern": "Read",
                },
            ],
        }
    ]
    write_json(folder / "evals" / "evals.json", {"skill_name": name, "evals": evals})
    return folder


def skill_creator_iteration(
    root: Path,
    *,
    skill: str = "creator-skill",
    label: str = "iteration-1",
    runs: int = 2,
    with_summary: bool = True,
) -> Path:
    """A skill-creator workspace iteration: one eval, with/without skill, run-<k> folders."""
    folder = root / f"{skill}-workspace" / label
    eval_dir = folder / "eval-0-summarise"
    write_json(
        eval_dir / "eval_metadata.json",
        {
            "eval_id": 0,
            "eval_name": "summarise",
            "prompt": "Summarise the report.",
            "assertions": ["Mentions the total", "Is under 100 words"],
        },
    )
    for config, outcomes in (("with_skill", [True, True]), ("without_skill", [True, False])):
        for k in range(1, runs + 1):
            run_dir = eval_dir / config / f"run-{k}"
            data: dict[str, Any] = {
                "expectations": [
                    {"text": "Mentions the total", "passed": outcomes[0], "evidence": "Total: 4"},
                    {"text": "Is under 100 words", "passed": outcomes[1], "evidence": "87 words"},
                ]
            }
            if with_summary:
                passed = sum(outcomes)
                data["summary"] = {
                    "passed": passed,
                    "failed": 2 - passed,
                    "total": 2,
                    "pass_rate": passed / 2,
                }
            write_json(run_dir / "grading.json", data)
            write_json(run_dir / "timing.json", {"total_tokens": 0, "duration_ms": 0})
            (run_dir / "outputs").mkdir(exist_ok=True)
            (run_dir / "outputs" / "summary.md").write_text("Total: 4", encoding="utf-8")
    return folder


def trigger_result(
    description: str, counts: list[tuple[str, bool, int]], *, skill: str = "changelog"
) -> dict[str, Any]:
    """skill-creator's run_eval.py output: (query, should_trigger, triggers of 3 runs) rows."""
    rows = [
        {"query": q, "should_trigger": s, "triggers": t, "runs": 3, "trigger_rate": t / 3}
        for q, s, t in counts
    ]
    return {"skill_name": skill, "description": description, "results": rows}
