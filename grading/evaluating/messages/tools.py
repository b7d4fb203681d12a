"""The agent's tools, named and shaped like Claude Code's, confined to the run's task folder.

Evals written for Claude Code match tool calls by name and JSON arguments
(`transcript_check` patterns such as `Write .*test_`), so the names and argument keys here
are Claude Code's. Every path goes through `TaskFolder.resolve`, which refuses anything
outside the task folder, symlinks included; a refusal is a tool error the agent sees.

A run never takes the campaign down: every argument is checked (type, range, NUL), the file
tools read only regular files up to MAX_FILE_BYTES (a FIFO would block forever, a device
never end), Glob and Grep stop after SEARCH_SECONDS and MAX_FILES_VISITED, Grep's pattern
runs with a timeout, Bash runs in the sandbox (`grading.sandbox`), and any exception inside a tool
comes back to the agent as a tool error. Only SandboxUnavailable is raised: that is
evalsite's failure, not the agent's, and the run is recorded as errored.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading import sandbox
from grading.graders.rustregex import RustRegexError, compile_rust_bounded

from ..harness import cap
from .tooldefs import tool_definitions as tool_definitions  # the tools and their shapes
from .toolfiles import MAX_FILE_BYTES as MAX_FILE_BYTES
from .toolfiles import ToolError, read_file, searchable, write_file

#: What the model gets back from one tool call at most; the rest is cut with a note.
MAX_TOOL_OUTPUT = 30_000
BASH_TIMEOUT_SECONDS = 120
MAX_BASH_TIMEOUT_SECONDS = 600
#: Glob and Grep give up (Glob and Grep's walk with partial results, a slow pattern with a
#: tool error) after this long or this many files.
SEARCH_SECONDS = 10.0
MAX_FILES_VISITED = 50_000
MAX_PATTERN_CHARS = 10_000
MAX_PATH_CHARS = 4096
WRITE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
GREP_MODES = ("content", "files_with_matches", "count")


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
        if "\0" in given:
            raise ToolError("the path contains a NUL character")
        if len(given) > MAX_PATH_CHARS:
            raise ToolError(f"the path is longer than {MAX_PATH_CHARS} characters")
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


class Toolbox:
    """Executes one run's tool calls inside its task folder."""

    def __init__(
        self,
        folder: TaskFolder,
        *,
        skills: dict[str, str] | None = None,
        limits: sandbox.Limits | None = None,
        unsafe: bool | None = None,
    ):
        self.folder = folder
        #: skill name → SKILL.md body, for the Skill tool.
        self.skills = skills or {}
        #: Bash's limits; its wall time is the call's `timeout`.
        self.limits = limits or sandbox.Limits()
        #: None: as runevals was told (--unsafe-no-sandbox sets `sandbox.unsandboxed`).
        self.unsafe = unsafe
        self.handlers: dict[str, Callable[[dict[str, Any]], str]] = {
            "Read": self._read,
            "Write": self._write,
            "Edit": self._edit,
            "Glob": self._glob,
            "Grep": self._grep,
            "Bash": self._bash,
        }
        if self.skills:
            self.handlers["Skill"] = self._skill

    def run(self, name: str, args: Any) -> tuple[str, bool]:
        """(output, is_error) for one tool call; errors are for the agent, never raised."""
        handler = self.handlers.get(name) if isinstance(name, str) else None
        if handler is None:
            return f"No such tool: {name}", True
        if not isinstance(args, dict):
            return "Tool input must be an object", True
        try:
            return cap(handler(args), MAX_TOOL_OUTPUT), False
        except ToolError as exc:
            return cap(str(exc), MAX_TOOL_OUTPUT), True
        except (sandbox.SandboxUnavailable, sandbox.LimitExceeded):
            raise  # evalsite's failure, or the run's quota spent: the run is errored
        except Exception as exc:  # noqa: BLE001 - whatever broke, the agent sees it; the run goes on
            return cap(f"{type(exc).__name__}: {exc}", MAX_TOOL_OUTPUT), True

    def _read(self, args: dict[str, Any]) -> str:
        path = self.folder.resolve(_text(args, "file_path"), must_exist=True)
        start = max(_integer(args, "offset", minimum=0, default=1), 1)
        limit = _integer(args, "limit", minimum=1, default=2000)
        if path.is_dir():
            raise ToolError(f"{args['file_path']} is a directory; use Glob or Bash ls")
        lines = read_file(path, args["file_path"]).decode("utf-8", errors="replace").splitlines()
        chosen = lines[start - 1 : start - 1 + limit]
        if not chosen:
            return "(empty file)" if not lines else f"(no lines from {start}: {len(lines)} lines)"
        return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(chosen, start=start))

    def _write(self, args: dict[str, Any]) -> str:
        path = self.folder.resolve(_text(args, "file_path"))
        content = _text(args, "content", allow_empty=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, content, args["file_path"])
        return f"File written: {path}"

    def _edit(self, args: dict[str, Any]) -> str:
        path = self.folder.resolve(_text(args, "file_path"), must_exist=True)
        old = _text(args, "old_string", allow_empty=True)
        new = _text(args, "new_string", allow_empty=True)
        replace_all = _flag(args, "replace_all")
        if old == new:
            raise ToolError("old_string and new_string are the same")
        try:
            text = read_file(path, args["file_path"]).decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(
                f"{args['file_path']} is not UTF-8 text; Edit cannot change it"
            ) from None
        count = text.count(old) if old else 0
        if count == 0:
            raise ToolError("old_string not found in the file")
        if count > 1 and not replace_all:
            raise ToolError(f"old_string occurs {count} times; give more context or replace_all")
        edited = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        write_file(path, edited, args["file_path"])
        return f"Edited {path} ({count if replace_all else 1} replacement(s))"

    def _walk(self, base: Path, search: _Search) -> Iterator[Path]:
        """Files under `base` (not .git), sorted, within the task folder and the search's budget."""
        root = self.folder.root.resolve()
        for folder, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            for name in sorted(files):
                if not search.visit():
                    return
                path = Path(folder) / name
                # A link pointing out of the task folder is not the agent's to see.
                if path.resolve().is_relative_to(root):
                    yield path

    def _glob(self, args: dict[str, Any]) -> str:
        pattern = _text(args, "pattern")
        if len(pattern) > MAX_PATTERN_CHARS:
            raise ToolError(f"pattern is longer than {MAX_PATTERN_CHARS} characters")
        base = self.folder.resolve(_text(args, "path", required=False) or ".", must_exist=True)
        search = _Search()
        matches = [
            str(p)
            for p in self._walk(base, search)
            if _glob_match(p.relative_to(base).as_posix(), pattern)
        ]
        return "\n".join([*(matches or ["No files found"]), *search.notes()])

    def _grep(self, args: dict[str, Any]) -> str:
        pattern = _text(args, "pattern", allow_empty=True)
        if len(pattern) > MAX_PATTERN_CHARS:
            raise ToolError(f"pattern is longer than {MAX_PATTERN_CHARS} characters")
        only = _text(args, "glob", required=False)
        if only and len(only) > MAX_PATTERN_CHARS:
            raise ToolError(f"glob is longer than {MAX_PATTERN_CHARS} characters")
        mode = _text(args, "output_mode", required=False) or "files_with_matches"
        if mode not in GREP_MODES:
            raise ToolError(f"output_mode must be one of {', '.join(GREP_MODES)}, not {mode!r}")
        try:
            # Claude Code's Grep is ripgrep: Rust regex syntax, matched line by line.
            regex = compile_rust_bounded(pattern, ignore_case=_flag(args, "-i"))
        except RustRegexError as exc:
            raise ToolError(f"invalid regular expression: {exc}") from None
        base = self.folder.resolve(_text(args, "path", required=False) or ".", must_exist=True)
        search = _Search()
        files = [base] if base.is_file() else self._walk(base, search)
        lines: list[str] = []
        for path in files:
            if only and not fnmatch.fnmatch(path.name, only):
                continue
            text = searchable(path)
            if text is None:
                continue
            hits = []
            for n, line in enumerate(text.splitlines(), 1):
                try:
                    if regex.search(line, timeout=search.remaining()):
                        hits.append((n, line))
                except TimeoutError:
                    raise ToolError(
                        f"Grep stopped after {SEARCH_SECONDS:g} s in {path}: the pattern is "
                        "too slow for this text (nested quantifiers?); simplify it"
                    ) from None
            if not hits:
                continue
            if mode == "content":
                lines += [f"{path}:{n}:{line}" for n, line in hits]
            elif mode == "count":
                lines.append(f"{path}:{len(hits)}")
            else:
                lines.append(str(path))
        return "\n".join([*(lines or ["No matches found"]), *search.notes()])

    def _bash(self, args: dict[str, Any]) -> str:
        command = _text(args, "command")
        timeout = BASH_TIMEOUT_SECONDS
        timeout_ms = args.get("timeout")
        if timeout_ms is not None:
            if (
                isinstance(timeout_ms, bool)
                or not isinstance(timeout_ms, int | float)
                or not math.isfinite(timeout_ms)
                or timeout_ms <= 0
            ):
                raise ToolError(
                    f"timeout must be a positive number of milliseconds, not {timeout_ms!r}"
                )
            timeout = min(timeout_ms / 1000, MAX_BASH_TIMEOUT_SECONDS)
        limits = dataclasses.replace(self.limits, wall_seconds=timeout)
        root = self.folder.root.resolve()
        done = sandbox.run(
            ["bash", "-c", command],
            folder=root,
            env=sandbox.allowed_environment(home=root),
            limits=limits,
            unsafe=sandbox.is_unsandboxed() if self.unsafe is None else self.unsafe,
        )
        output = done.stdout + (("\n" if done.stdout else "") + done.stderr if done.stderr else "")
        if done.output_truncated:
            output += f"\n[output truncated: only the first {limits.output_bytes} bytes were kept]"
        if done.timed_out:
            raise ToolError(f"Command timed out after {timeout:g} s\n{output}".strip())
        if done.limit == "memory_bytes":  # read from stderr: a remark, the output stands
            output += (
                f"\n[{sandbox.describe(done.limit, limits).replace('it ran', 'it may have run')}]"
            )
        elif done.limit == "disk_bytes":
            # The folder keeps what was written, so every later command would be stopped
            # too: the run ends here, errored, saying why.
            raise sandbox.LimitExceeded(
                done.limit, f"Bash was stopped: {sandbox.describe(done.limit, limits)}"
            )
        elif done.limit:
            why = sandbox.describe(done.limit, limits)
            raise ToolError(f"Command stopped by the sandbox: {why}\n{output}".strip())
        if done.returncode != 0:
            return f"{output}\nExit code {done.returncode}".strip()
        return output or "(no output)"

    def _skill(self, args: dict[str, Any]) -> str:
        name = _text(args, "skill")
        for known, body in self.skills.items():
            if name == known or name.endswith(f":{known}"):
                return body
        available = ", ".join(sorted(self.skills))
        raise ToolError(f"Unknown skill: {name}. Available skills: {available}")


class _Search:
    """The time and file budget of one Glob or Grep call."""

    def __init__(self) -> None:
        self.deadline = time.monotonic() + SEARCH_SECONDS
        self.visited = 0
        self.stopped: str | None = None

    def visit(self) -> bool:
        self.visited += 1
        if self.visited > MAX_FILES_VISITED:
            self.stopped = f"after {MAX_FILES_VISITED} files"
        elif time.monotonic() > self.deadline:
            self.stopped = f"after {SEARCH_SECONDS:g} s"
        return self.stopped is None

    def remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.001)

    def notes(self) -> list[str]:
        return [f"[search stopped {self.stopped}: results are partial]"] if self.stopped else []


def _text(
    args: dict[str, Any], key: str, *, required: bool = True, allow_empty: bool = False
) -> Any:
    """A string argument, checked: present when required, text, no NUL."""
    value = args.get(key)
    if value is None:
        if required:
            raise ToolError(f"{key} is required")
        return None
    if not isinstance(value, str):
        raise ToolError(f"{key} must be a string, not {type(value).__name__}")
    if "\0" in value and key in ("file_path", "path", "pattern", "glob", "command", "skill"):
        raise ToolError(f"{key} contains a NUL character")
    if required and not allow_empty and not value.strip():
        raise ToolError(f"{key} is required")
    return value


def _integer(args: dict[str, Any], key: str, *, minimum: int, default: int) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"{key} must be an integer, not {value!r}")
    if value < minimum:
        raise ToolError(f"{key} must be at least {minimum}, not {value}")
    return value


def _flag(args: dict[str, Any], key: str) -> bool:
    value = args.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ToolError(f"{key} must be true or false, not {value!r}")
    return value


def _glob_match(relative: str, pattern: str) -> bool:
    """fnmatch with `**` spanning folders, as Claude Code's Glob does."""
    if fnmatch.fnmatch(relative, pattern):
        return True
    if pattern.startswith("**/"):
        return _glob_match(relative, pattern[3:]) or fnmatch.fnmatch(relative, pattern)
    return False
