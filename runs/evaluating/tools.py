"""The agent's tools, named and shaped like Claude Code's, confined to the run's task folder.

Evals written for Claude Code match tool calls by name and JSON arguments
(`transcript_check` patterns such as `Write .*test_`), so the names and argument keys here
are Claude Code's. Every path goes through `TaskFolder.resolve`, which refuses anything
outside the task folder, symlinks included; a refusal is a tool error the agent sees.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading.graders.command import command_environment

#: What the model gets back from one tool call at most; the rest is cut with a note.
MAX_TOOL_OUTPUT = 30_000
BASH_TIMEOUT_SECONDS = 120
MAX_BASH_TIMEOUT_SECONDS = 600
WRITE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")


class ToolError(Exception):
    """A tool call the agent made wrongly; its message goes back as the tool result."""


def safe_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for commands the agent runs: the graders' own (no secrets, no git
    location variables, no DJANGO_*), plus `extra`."""
    return command_environment(extra)


def cap(text: str, limit: int = MAX_TOOL_OUTPUT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit} more characters not shown]"


@dataclass(frozen=True)
class TaskFolder:
    root: Path

    def resolve(self, given: Any, *, must_exist: bool = False) -> Path:
        """An agent-supplied path as an absolute path inside the task folder, or ToolError.

        Relative paths are taken from the task folder; absolute ones must lie inside it.
        Symlinks are followed before the check, so a link pointing out is refused too.
        """
        if not isinstance(given, str) or not given.strip():
            raise ToolError("a file path is required")
        root = self.root.resolve()
        path = Path(given)
        candidate = (path if path.is_absolute() else root / path).resolve()
        if candidate != root and not candidate.is_relative_to(root):
            raise ToolError(f"{given} is outside the working directory {root}; access denied")
        if must_exist and not candidate.exists():
            raise ToolError(f"File does not exist: {given}")
        return candidate

    def shown(self, path: Path) -> str:
        return str(path)


def tool_definitions(*, with_skill: bool) -> list[dict[str, Any]]:
    """The tools offered to the agent; `Skill` only in skill-loading conditions."""
    tools: list[dict[str, Any]] = [
        {
            "name": "Read",
            "description": "Reads a file from the local filesystem. Returns the content with "
            "line numbers (cat -n format). Use offset and limit for long files.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "The path of the file"},
                    "offset": {"type": "integer", "description": "Line to start from (1-based)"},
                    "limit": {"type": "integer", "description": "Number of lines to read"},
                },
                "required": ["file_path"],
            },
        },
        {
            "name": "Write",
            "description": "Writes a file to the local filesystem, replacing it if it exists.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "content": {"type": "string"},
                },
                "required": ["file_path", "content"],
            },
        },
        {
            "name": "Edit",
            "description": "Performs exact string replacement in a file. old_string must be "
            "unique in the file unless replace_all is true.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "old_string": {"type": "string"},
                    "new_string": {"type": "string"},
                    "replace_all": {"type": "boolean", "default": False},
                },
                "required": ["file_path", "old_string", "new_string"],
            },
        },
        {
            "name": "Glob",
            "description": "Finds files by glob pattern (e.g. **/*.py), sorted by path.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string", "description": "Directory to search in"},
                },
                "required": ["pattern"],
            },
        },
        {
            "name": "Grep",
            "description": "Searches file contents with a regular expression.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string"},
                    "glob": {"type": "string", "description": "Only files matching this glob"},
                    "output_mode": {
                        "type": "string",
                        "enum": ["content", "files_with_matches", "count"],
                    },
                    "-i": {"type": "boolean", "description": "Case insensitive"},
                },
                "required": ["pattern"],
            },
        },
        {
            "name": "Bash",
            "description": "Executes a bash command in the working directory and returns its "
            "output. Commands time out after 120 s unless timeout (ms) says otherwise.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "timeout": {"type": "integer", "description": "Timeout in milliseconds"},
                    "description": {"type": "string"},
                },
                "required": ["command"],
            },
        },
    ]
    if with_skill:
        tools.append(
            {
                "name": "Skill",
                "description": "Loads a skill by name and returns its instructions. Use it "
                "when a listed skill applies to the task.",
                "input_schema": {
                    "type": "object",
                    "properties": {"skill": {"type": "string", "description": "The skill name"}},
                    "required": ["skill"],
                },
            }
        )
    return tools


class Toolbox:
    """Executes one run's tool calls inside its task folder."""

    def __init__(self, folder: TaskFolder, *, skills: dict[str, str] | None = None):
        self.folder = folder
        #: skill name → SKILL.md body, for the Skill tool.
        self.skills = skills or {}

    def run(self, name: str, args: Any) -> tuple[str, bool]:
        """(output, is_error) for one tool call; errors are for the agent, never raised."""
        handler = getattr(self, f"_{name.lower()}", None)
        if handler is None or (name == "Skill" and not self.skills):
            return f"No such tool: {name}", True
        if not isinstance(args, dict):
            return "Tool input must be an object", True
        try:
            return cap(handler(args)), False
        except ToolError as exc:
            return str(exc), True
        except (OSError, UnicodeDecodeError) as exc:
            return f"{type(exc).__name__}: {exc}", True

    def _read(self, args: dict[str, Any]) -> str:
        path = self.folder.resolve(args.get("file_path"), must_exist=True)
        if path.is_dir():
            raise ToolError(f"{args['file_path']} is a directory; use Glob or Bash ls")
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        start = max(int(args.get("offset") or 1), 1)
        limit = int(args.get("limit") or 2000)
        chosen = lines[start - 1 : start - 1 + limit]
        if not chosen:
            return "(empty file)" if not lines else f"(no lines from {start}: {len(lines)} lines)"
        return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(chosen, start=start))

    def _write(self, args: dict[str, Any]) -> str:
        path = self.folder.resolve(args.get("file_path"))
        content = args.get("content")
        if not isinstance(content, str):
            raise ToolError("content must be a string")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        return f"File written: {path}"

    def _edit(self, args: dict[str, Any]) -> str:
        path = self.folder.resolve(args.get("file_path"), must_exist=True)
        old, new = args.get("old_string"), args.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str):
            raise ToolError("old_string and new_string must be strings")
        if old == new:
            raise ToolError("old_string and new_string are the same")
        text = path.read_text(encoding="utf-8")
        count = text.count(old)
        if count == 0:
            raise ToolError("old_string not found in the file")
        if count > 1 and not args.get("replace_all"):
            raise ToolError(f"old_string occurs {count} times; give more context or replace_all")
        path.write_text(
            text.replace(old, new) if args.get("replace_all") else text.replace(old, new, 1),
            encoding="utf-8",
        )
        return f"Edited {path} ({count if args.get('replace_all') else 1} replacement(s))"

    def _walk(self, base: Path) -> list[Path]:
        root = self.folder.root.resolve()
        found = []
        for folder, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            for name in sorted(files):
                path = Path(folder) / name
                # A link pointing out of the task folder is not the agent's to see.
                if path.resolve().is_relative_to(root):
                    found.append(path)
        return found

    def _glob(self, args: dict[str, Any]) -> str:
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ToolError("pattern is required")
        base = self.folder.resolve(args.get("path") or ".", must_exist=True)
        matches = [
            str(p) for p in self._walk(base) if _glob_match(p.relative_to(base).as_posix(), pattern)
        ]
        return "\n".join(matches) if matches else "No files found"

    def _grep(self, args: dict[str, Any]) -> str:
        try:
            regex = re.compile(args.get("pattern") or "", re.IGNORECASE if args.get("-i") else 0)
        except re.error as exc:
            raise ToolError(f"invalid regular expression: {exc}") from None
        base = self.folder.resolve(args.get("path") or ".", must_exist=True)
        files = [base] if base.is_file() else self._walk(base)
        if glob := args.get("glob"):
            files = [f for f in files if fnmatch.fnmatch(f.name, glob)]
        mode = args.get("output_mode") or "files_with_matches"
        lines: list[str] = []
        for path in files:
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            hits = [(n, line) for n, line in enumerate(text.splitlines(), 1) if regex.search(line)]
            if not hits:
                continue
            if mode == "content":
                lines += [f"{path}:{n}:{line}" for n, line in hits]
            elif mode == "count":
                lines.append(f"{path}:{len(hits)}")
            else:
                lines.append(str(path))
        return "\n".join(lines) if lines else "No matches found"

    def _bash(self, args: dict[str, Any]) -> str:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ToolError("command is required")
        timeout_ms = args.get("timeout")
        timeout = BASH_TIMEOUT_SECONDS
        if isinstance(timeout_ms, int | float) and timeout_ms > 0:
            timeout = min(timeout_ms / 1000, MAX_BASH_TIMEOUT_SECONDS)
        try:
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=self.folder.root,
                env=safe_environment({"HOME": str(self.folder.root)}),
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired as exc:
            partial = (exc.stdout or "") if isinstance(exc.stdout, str) else ""
            raise ToolError(f"Command timed out after {timeout:g} s\n{partial}") from None
        output = done.stdout + (("\n" if done.stdout else "") + done.stderr if done.stderr else "")
        if done.returncode != 0:
            return f"{output}\nExit code {done.returncode}".strip()
        return output or "(no output)"

    def _skill(self, args: dict[str, Any]) -> str:
        name = args.get("skill")
        for known, body in self.skills.items():
            if name == known or (isinstance(name, str) and name.endswith(f":{known}")):
                return body
        available = ", ".join(sorted(self.skills))
        raise ToolError(f"Unknown skill: {name}. Available skills: {available}")


def _glob_match(relative: str, pattern: str) -> bool:
    """fnmatch with `**` spanning folders, as Claude Code's Glob does."""
    if fnmatch.fnmatch(relative, pattern):
        return True
    if pattern.startswith("**/"):
        return _glob_match(relative, pattern[3:]) or fnmatch.fnmatch(relative, pattern)
    return False
