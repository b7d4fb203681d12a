"""An eval-magic run's documents: the skill's evals, a run's conversation and its grading.

Sizes are those of real runs: conversations of ~40 events and 20–40 KB, evidence strings of
150–400 characters, final messages of 1–2 KB.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import orjson

from bench.texts import IDENTS, TOOLS, Pools, Texts

EVAL_WORDS = (
    ("dirty", "seeded", "typo", "flaky", "legacy", "nested", "renamed", "partial", "stale"),
    ("tree", "branch", "migration", "fixture", "config", "endpoint", "worker", "cache", "test"),
    ("worktree", "rollback", "pagination", "refactor", "bisect", "review", "cleanup", "retry"),
)
ASSERTION_STEMS = (
    "isolated_in_worktree",
    "created_worktree",
    "ran_tests_first",
    "wrote_failing_test",
    "reported_root_cause",
    "no_unrelated_edits",
    "asked_before_destructive",
    "verified_before_claiming",
    "cited_evidence",
    "kept_main_clean",
    "summarised_changes",
    "checked_git_status",
    "used_skill_checklist",
    "minimal_diff",
    "explained_tradeoffs",
    "followed_plan",
)
GRADERS = ("transcript_check", "llm_judge", "llm_judge", "command_check", "diff_scope")


@dataclass(frozen=True)
class EvalSpec:
    eval_id: str
    prompt: str
    assertions: tuple[tuple[str, str], ...]  # (id, grader)
    files: tuple[str, ...]


def eval_specs(skill: str, n: int, assertions: int, pools: Pools, seed: int) -> list[EvalSpec]:
    """The skill's evals: the same ids, prompts and assertions in every iteration."""
    rng = random.Random(f"evals/{seed}/{skill}")
    texts = Texts(pools, rng)
    specs = []
    for i in range(n):
        eval_id = "-".join(rng.choice(words) for words in EVAL_WORDS) + f"-{i:02d}"
        stems = rng.sample(ASSERTION_STEMS, min(assertions, len(ASSERTION_STEMS)))
        stems += [f"check_{k:02d}" for k in range(len(stems), assertions)]
        specs.append(
            EvalSpec(
                eval_id=eval_id,
                prompt=texts.prose(300, 700),
                assertions=tuple((s, rng.choice(GRADERS)) for s in stems),
                files=tuple(
                    f"/tmp/eval-magic/{skill}/env-{eval_id}/{texts.path()}"
                    for _ in range(rng.randint(0, 3))
                ),
            )
        )
    return specs


def _tool_call(texts: Texts, name: str, skill: str) -> tuple[Any, str]:
    """A call of tool `name`: its arguments and its result."""
    rng = texts.rng
    if name == "Skill":
        return {"skill": skill}, f"Launching skill: {skill}\n" + texts.prose(200, 600)
    if name == "Bash":
        command = rng.choice(
            (
                "git status --short && git branch --show-current",
                "python -m pytest -x -q tests/",
                f"git worktree add .worktrees/feature/{rng.choice(IDENTS)} -b feature/x 2>&1",
                "git log --oneline -n 20",
                "ls -la src/",
                f"grep -rn {rng.choice(IDENTS)!r} src/ | head -40",
            )
        )
        args = {"command": command, "description": texts.prose(40, 120)}
        return args, texts.shell(300, 1200)
    if name == "Read":
        return {"file_path": "/work/" + texts.path()}, texts.code(300, 1400)
    if name == "Edit":
        args = {
            "file_path": "/work/" + texts.path(),
            "old_string": texts.code(80, 300),
            "new_string": texts.code(80, 400),
        }
        return args, "The file has been updated. " + texts.code(100, 400)
    if name == "Write":
        return {"file_path": "/work/" + texts.path(), "content": texts.code(300, 900)}, (
            "File created successfully."
        )
    if name == "Grep":
        return {"pattern": rng.choice(IDENTS), "path": "src", "output_mode": "content"}, (
            texts.code(200, 700)
        )
    return {"pattern": "**/*.py"}, "\n".join(texts.path() for _ in range(rng.randint(5, 25)))


def conversation(
    texts: Texts, spec: EvalSpec, *, skill: str, loads_skill: bool, events: int
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """(conversation.json, run.json tool_invocations, final message) of one run."""
    rng = texts.rng
    followup = events >= 8 and rng.random() < 0.3
    followup_at = rng.randint(events // 2, events - 4) if followup else -1
    out: list[dict[str, Any]] = [
        {"type": "user_message", "ordinal": 0, "round": 1, "text": spec.prompt}
    ]
    tools: list[dict[str, Any]] = []
    round_ = 1
    followups = 0
    while len(out) < events - 1:
        ordinal = len(out)
        if ordinal == followup_at:
            round_ += 1
            followups += 1
            out.append(
                {
                    "type": "user_message",
                    "ordinal": ordinal,
                    "round": round_,
                    "text": texts.prose(80, 300),
                    "origin": {"responder": "llm", "rationale": texts.prose(60, 160)},
                }
            )
        elif out[-1]["type"] != "assistant_message" and rng.random() < 0.55:
            out.append(
                {
                    "type": "assistant_message",
                    "ordinal": ordinal,
                    "round": round_,
                    "text": texts.prose(150, 700),
                }
            )
        else:
            name = "Skill" if loads_skill and not tools else rng.choice(TOOLS)
            args, result = _tool_call(texts, name, skill)
            event = {
                "type": "tool_invocation",
                "ordinal": ordinal,
                "round": round_,
                "name": name,
                "args": args,
                "result": result,
            }
            out.append(event)
            tools.append({"name": name, "args": args, "result": result, "ordinal": len(tools)})
    final = texts.prose(1000, 2000)
    out.append({"type": "assistant_message", "ordinal": len(out), "round": round_, "text": final})
    doc = {"status": "completed", "delivered_followups": followups, "events": out}
    return doc, tools, final


def grading(
    texts: Texts,
    spec: EvalSpec,
    tools: list[dict[str, Any]],
    final: str,
    *,
    pass_p: float,
    loads_skill: bool,
) -> dict[str, Any]:
    """A run's grading.json: each assertion passes with chance `pass_p`; a run that loads
    the skill also has the `__skill_invoked` meta result (true in ~90 % of runs)."""
    rng = texts.rng
    results = []
    for assertion_id, grader in spec.assertions:
        passed = rng.random() < pass_p
        if grader == "transcript_check" and tools:
            tool = rng.choice(tools)
            head = orjson.dumps(tool["args"]).decode()[:180]
            evidence = f"matched ordinal {tool['ordinal']}: {tool['name']} {head}"
            if len(evidence) < 150:
                evidence += " " + texts.prose(150 - len(evidence), 260 - len(evidence))
            confidence = 1.0
        else:
            quote = final[: rng.randint(60, 160)]
            evidence = (
                f'The final message says: "{quote}" ' + texts.prose(80, 220)
                if passed
                else "No evidence in the transcript that " + texts.prose(120, 330)
            )[:400]
            confidence = 1.0 if grader != "llm_judge" else round(rng.uniform(0.5, 1.0), 2)
        results.append(
            {
                "id": assertion_id,
                "passed": passed,
                "evidence": evidence,
                "confidence": confidence,
                "grader": grader,
            }
        )
    passed_n = sum(r["passed"] for r in results)
    doc: dict[str, Any] = {
        "assertion_results": results,
        "summary": {
            "passed": passed_n,
            "failed": len(results) - passed_n,
            "total": len(results),
            "pass_rate": passed_n / len(results) if results else 0,
        },
    }
    if loads_skill:
        invoked = rng.random() < 0.9
        doc["meta_results"] = [
            {
                "id": "__skill_invoked",
                "passed": invoked,
                "evidence": "Skill invocation verified from transcript (ordinal 0)."
                if invoked
                else "No Skill tool call and no behaviour attributable to the skill.",
                "confidence": 1.0,
                "grader": "transcript_check",
            }
        ]
        doc["meta_summary"] = {
            "passed": int(invoked),
            "failed": int(not invoked),
            "total": 1,
            "skill_invoked": invoked,
        }
    return doc
