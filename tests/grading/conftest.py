"""Helpers for the grader tests: task folders as the harness builds them, run records."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
GIT_IDENTITY = ["-c", "user.name=tests", "-c", "user.email=tests@example.invalid"]


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *GIT_IDENTITY, "-c", "commit.gpgsign=false", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def make_task_dir(folder: Path, files: dict[str, str | bytes]) -> Path:
    """A git repository whose first commit holds `files` (the eval's fixtures)."""
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q", "-b", "main")
    for name, content in files.items():
        write(folder / name, content)
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "--allow-empty", "-m", "baseline")
    return folder


def write(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


def validate(data: Any, schema_name: str) -> None:
    schema = json.loads((SCHEMAS / schema_name).read_text())
    jsonschema.Draft7Validator(schema).validate(data)


def conversation_run(*events: dict[str, Any], final_message: str = "") -> dict[str, Any]:
    """A run.json whose conversation holds `events` (ordinals and rounds filled in)."""
    numbered = [{"ordinal": i, "round": 1, **event} for i, event in enumerate(events)]
    tools = [
        {k: e.get(k) for k in ("name", "args", "ordinal", "result")}
        for e in numbered
        if e["type"] == "tool_invocation"
    ]
    if not final_message:
        texts = [e["text"] for e in numbered if e["type"] == "assistant_message"]
        final_message = texts[-1] if texts else ""
    return {
        "eval_id": "an-eval",
        "condition": "with_skill",
        "skill_path": "/skills/demo/SKILL.md",
        "prompt": "Do the task.",
        "files": [],
        "final_message": final_message,
        "tool_invocations": tools,
        "conversation": {"status": "completed", "delivered_followups": 0, "events": numbered},
    }


def user(text: str) -> dict[str, Any]:
    return {"type": "user_message", "text": text}


def say(text: str) -> dict[str, Any]:
    return {"type": "assistant_message", "text": text}


def tool(name: str, args: Any = None, result: Any = "ok") -> dict[str, Any]:
    return {"type": "tool_invocation", "name": name, "args": args, "result": result}


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    return make_task_dir(tmp_path / "task", {"README.md": "hello\n"})


@pytest.fixture
def cli() -> Path:
    """The Claude Code CLI the claude-agent-sdk wheel bundles (skipped without the extra)."""
    pytest.importorskip("claude_agent_sdk")
    from grading.evaluating import claude_code

    binary = claude_code.cli_path()
    if binary is None:
        pytest.skip("the claude-agent-sdk wheel holds no bundled CLI")
    return binary
