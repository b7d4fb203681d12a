"""The bundled Claude Code CLI: where it is, its version, and how it is invoked."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import tempfile
from pathlib import Path

import anthropic

NAME = "claude-code"
#: Tools allowed without asking, besides what acceptEdits allows: reading and editing
#: inside the task folder. File tools are left out on purpose: an allow rule for `Write`
#: would let it write anywhere, where the CLI would otherwise ask (and, with nobody to ask,
#: refuse). Bash runs in the sandbox. Names this CLI version lacks are ignored by it.
ALLOWED_TOOLS = ("Bash", "Skill", "Agent", "Task", "TodoWrite", "ToolSearch")
SETTING_SOURCES = "project,local"
PERMISSION_MODE = "acceptEdits"
ENVIRONMENT = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


class ClaudeCodeError(anthropic.APIError):
    """The CLI could not play a round (crashed, stopped by a limit, an API error after its
    retries). An APIError, so that the runner records the run as errored, never failed."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        # No request of evalsite's failed (the CLI's calls are its own): there is none to give.
        super().__init__(message, None, body=None)  # type: ignore[arg-type]
        #: The round ran past its wall time (a trigger run records a timeout, not an error).
        self.timed_out = timed_out


def cli_path() -> Path | None:
    """The CLI bundled in the installed claude-agent-sdk wheel, None without the extra.

    Found without importing the SDK (which imports far more than this needs).
    """
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / "_bundled" / "claude"
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def available() -> bool:
    """Whether `--harness claude-code` can run here (the default when it can)."""
    return cli_path() is not None


@functools.cache
def cli_version(binary: Path) -> str:
    """`2.1.332` from `claude --version` ("2.1.332 (Claude Code)")."""
    done = subprocess.run(
        [str(binary), "--version"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tempfile.gettempdir()},
    )
    words = done.stdout.split()
    if done.returncode != 0 or not words:
        raise ClaudeCodeError(f"{binary} --version failed: {done.stderr.strip()[:200]}")
    return words[0]


def cli_arguments(
    binary: Path, *, model: str, session: list[str], prompt: str, env: Path
) -> list[str]:
    """One round's command line: print mode, stream-json, isolated, without prompts."""
    flags = {"claudeMdExcludes": ancestor_memory(env)}
    return [
        str(binary),
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        model,
        "--setting-sources",
        SETTING_SOURCES,
        "--strict-mcp-config",
        "--permission-mode",
        PERMISSION_MODE,
        "--permission-prompts",
        "none",
        "--allowedTools",
        " ".join(ALLOWED_TOOLS),
        "--settings",
        json.dumps(flags),
        *session,
        "--",  # the prompt is never read as an option's value
        prompt,
    ]


def ancestor_memory(env: Path) -> list[str]:
    """CLAUDE.md files of every folder above the task folder, which the CLI would read.

    The workspace may sit inside a project of its own; its instructions are not the eval's.
    (Sandboxed, those folders are not even visible; unsandboxed, this keeps them out.)
    """
    patterns = []
    for folder in env.resolve().parents:
        base = folder.as_posix().rstrip("/")
        patterns += [f"{base}/CLAUDE.md", f"{base}/CLAUDE.local.md", f"{base}/.claude/CLAUDE.md"]
    return patterns
