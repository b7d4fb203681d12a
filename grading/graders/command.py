"""`command_check`: an eval author's shell command run in the task folder after the agent.

The command is the eval author's, but what it runs is the agent's work (its tests, its
scripts), so it runs in the sandbox (grading/sandbox/) like the agent's Bash: the
task folder the only writable place, no network, limits, and an environment that is the
sandbox's allow-list plus the assertion's `env` and matrix cell — nothing inherited from
runevals, whose environment holds the API key and the site's secrets.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import regex

from grading import sandbox
from grading.sandbox import hostfiles

from .rustregex import RustRegexError, compile_rust_bounded
from .verdict import Verdict

GRADER = "command_check"
DEFAULT_TIMEOUT_SECONDS = 120.0
CAPTURE_BYTES = 2048
STDERR_EVIDENCE_CHARS = 200
#: expect_stdout is matched against up to the sandbox's output budget (1 MiB) of stdout;
#: an eval's pattern that backtracks catastrophically fails the cell instead of hanging.
REGEX_SECONDS = 10.0

#: The variables `git rev-parse --local-env-vars` names — they locate or reconfigure *a*
#: repository, so one inherited from runevals (say, run from a git hook) would point the
#: command's git at the wrong one — plus the discovery-limiting ones. Others (GIT_AUTHOR_*,
#: GIT_SSH_COMMAND, GIT_TERMINAL_PROMPT…) are the user's preferences and stay.
GIT_LOCATION_VARIABLES = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_OBJECT_DIRECTORY",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_GRAFT_FILE",
        "GIT_INDEX_FILE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_REPLACE_REF_BASE",
        "GIT_PREFIX",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_SHALLOW_FILE",
        "GIT_COMMON_DIR",
        "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
        "GIT_NAMESPACE",
        "GIT_QUARANTINE_PATH",
    }
)
SECRET_NAMES = frozenset(
    {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "SECRET_KEY", "DATABASE_URL"}
)
#: Names that look like credentials: *_API_KEY, *_TOKEN, *_SECRET and their kin.
SECRET_PATTERN = re.compile(
    r"(_KEY|_TOKEN|_SECRET|PASSWORD|_PASSWD|CREDENTIALS?|_DATABASE_URL)$", re.IGNORECASE
)


def command_environment(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """For evalsite's own git on the host (diff_scope, task templates): the inherited
    environment minus git location variables and secrets, plus `overrides`.

    Not for commands the agent or an eval runs: those get the sandbox's allow-list.
    `DJANGO_*` goes too: runevals' own DJANGO_SETTINGS_MODULE would otherwise win over the
    `setdefault` in a fixture project's manage.py.
    """
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in GIT_LOCATION_VARIABLES
        and name not in SECRET_NAMES
        and not SECRET_PATTERN.search(name)
        and not name.startswith("DJANGO_")
    }
    env.update(overrides or {})
    return env


def matrix_cells(matrix: Mapping[str, list[str]] | None) -> list[dict[str, str]]:
    """The Cartesian product of a matrix, keys in sorted order, values in declared order."""
    if not matrix:
        return []
    keys = sorted(matrix)
    return [
        dict(zip(keys, values, strict=True))
        for values in itertools.product(*(matrix[key] for key in keys))
    ]


class SetupFileError(Exception):
    """A `setup_files` entry that cannot be copied; the message names it."""


#: A held-out file is a test or its data; one larger is not something to copy per run.
MAX_SETUP_FILE_BYTES = 64 * 1024**2


def copy_setup_files(paths: list[str], *, evals_dir: Path, task_dir: Path) -> None:
    """Copy held-out files (relative to the skill's evals/) to the same path in the task.

    Both ends are untrusted: the skill's author may have linked a setup file to a host file
    and the agent may have left links where it lands, so both are walked by `hostfiles`
    (a link on either side is refused, never followed; a link the agent left as the file
    itself is replaced).
    """
    for declared in paths:
        try:
            parts = hostfiles.relative_parts(declared)
        except hostfiles.UntrustedPath:
            raise SetupFileError(
                f"setup file {declared!r} must be relative, without '..'"
            ) from None
        if not parts:
            raise SetupFileError(f"setup file {declared!r} must be relative, without '..'")
        if parts[0].lower() == ".git":
            raise SetupFileError(f"setup file {declared!r} may not write the task's .git")
        relative = PurePosixPath(*parts)
        try:
            found = hostfiles.entry_kind(evals_dir, relative)
            if found == "a directory":
                files = [relative / f for f in hostfiles.regular_files(evals_dir, relative)]
            elif found == "a regular file":
                files = [relative]
            elif found is None:
                raise SetupFileError(f"setup file {declared!r} not found under {evals_dir}")
            else:
                raise SetupFileError(f"setup file {declared!r} is {found}; refused")
            contents = [
                (
                    file,
                    hostfiles.read_whole(
                        evals_dir, file, max_bytes=MAX_SETUP_FILE_BYTES, what="a setup file"
                    ),
                )
                for file in files
            ]
        except hostfiles.UntrustedPath as exc:
            raise SetupFileError(f"setup file {declared!r}: {exc}") from None
        for file, data in contents:
            try:
                hostfiles.write(task_dir, file, data)
            except hostfiles.UntrustedPath as exc:
                raise SetupFileError(
                    f"setup file {declared!r} would land outside the task folder ({exc})"
                ) from None


def command_check(
    assertion: Mapping[str, Any],
    *,
    task_dir: Path,
    evals_dir: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    unsafe: bool | None = None,
) -> tuple[Verdict, dict[str, Any]]:
    """(verdict, command-check record) for one `command_check` assertion.

    The record is valid against command-check.schema.json; runevals writes it to
    `command-checks/<id>.json`. The command runs sandboxed unless `unsafe` (None: as
    runevals was told, `sandbox.is_unsandboxed()`); SandboxUnavailable is raised, since a
    command that could not be run says nothing about the agent.
    """
    assertion_id = str(assertion["id"])
    expected = int(assertion.get("expect_exit_code", 0))
    stdout_pattern = assertion.get("expect_stdout")

    def failed_before_running(evidence: str) -> tuple[Verdict, dict[str, Any]]:
        record = {
            "id": assertion_id,
            "passed": False,
            "evidence": evidence,
            "expected_exit_code": expected,
            "actual_exit_code": None,
            "stdout": "",
            "stderr": "",
        }
        # The eval, not the agent, is at fault: confidence 0 sends it to a person.
        return Verdict(assertion_id, False, evidence, confidence=0.0, grader=GRADER), record

    if not task_dir.is_dir():
        return failed_before_running(f"the task folder {task_dir} does not exist")
    stdout_regex = None
    if stdout_pattern is not None:
        try:
            stdout_regex = compile_rust_bounded(stdout_pattern)
        except RustRegexError as exc:
            return failed_before_running(f"invalid expect_stdout regex /{stdout_pattern}/: {exc}")
    try:
        if assertion.get("setup_files"):
            if evals_dir is None:
                raise SetupFileError("setup_files given but no evals/ directory to copy from")
            copy_setup_files(list(assertion["setup_files"]), evals_dir=evals_dir, task_dir=task_dir)
    except (SetupFileError, OSError) as exc:
        return failed_before_running(f"could not copy setup files: {exc}")

    base_env = {str(k): str(v) for k, v in (assertion.get("env") or {}).items()}
    cells = matrix_cells(assertion.get("matrix"))
    runs = [
        _run_cell(
            str(assertion["command"]),
            overrides={**base_env, **cell},
            task_dir=task_dir,
            timeout=timeout,
            expected=expected,
            stdout_pattern=stdout_pattern,
            stdout_regex=stdout_regex,
            unsafe=sandbox.is_unsandboxed() if unsafe is None else unsafe,
        )
        for cell in (cells or [{}])
    ]
    if not cells:
        single = runs[0]
        record = {"id": assertion_id, **single, "expected_exit_code": expected}
        return Verdict(assertion_id, single["passed"], single["evidence"], grader=GRADER), record

    for cell, outcome in zip(cells, runs, strict=True):
        outcome["env"] = {**base_env, **cell}
    failures = [
        f"{', '.join(f'{k}={v}' for k, v in cell.items())} ({outcome['evidence']})"
        for cell, outcome in zip(cells, runs, strict=True)
        if not outcome["passed"]
    ]
    passed = not failures
    evidence = f"{len(runs) - len(failures)}/{len(runs)} matrix cells passed"
    if failures:
        evidence += "; failed cells: " + "; ".join(failures)
    record = {
        "id": assertion_id,
        "passed": passed,
        "evidence": evidence,
        "expected_exit_code": expected,
        "actual_exit_code": None,
        "stdout": "",
        "stderr": "",
        "cells": runs,
    }
    return Verdict(assertion_id, passed, evidence, grader=GRADER), record


def _run_cell(
    command: str,
    *,
    overrides: dict[str, str],
    task_dir: Path,
    timeout: float,
    expected: int,
    stdout_pattern: str | None,
    stdout_regex: regex.Pattern[str] | None,
    unsafe: bool,
) -> dict[str, Any]:
    """One run of the command: passed, evidence, exit code and capped output."""
    limits = sandbox.Limits(wall_seconds=timeout)
    try:
        done = sandbox.run(
            ["sh", "-c", command],
            folder=task_dir,
            env=sandbox.allowed_environment(overrides, home=task_dir),
            limits=limits,
            unsafe=unsafe,
        )
    except (OSError, ValueError, sandbox.SandboxError) as exc:
        if isinstance(exc, sandbox.SandboxUnavailable):
            raise
        # No task folder, no sh, an `env` value that cannot be set (NUL).
        return {
            "passed": False,
            "evidence": f"could not run the command: {exc}",
            "actual_exit_code": None,
            "stdout": "",
            "stderr": "",
        }
    code = done.returncode
    # Out of memory is read from stderr, so it is a remark, not a verdict; the other limits
    # are the sandbox's own doing (a kill, a signal only the limit sends).
    stopped = None if done.limit == "memory_bytes" else done.limit
    clauses = []
    if done.timed_out:
        clauses.append(f"timed out after {timeout:g} s")
        passed = False
    elif code is None or stopped:
        clauses.append(f"stopped by the sandbox: {sandbox.describe(stopped or '', limits)}")
        passed = False
    else:
        passed = code == expected
        clauses.append(
            f"exit code matched {code}" if passed else f"exit code {code}, expected {expected}"
        )
    if stdout_regex is not None and not done.timed_out:
        try:
            matched = stdout_regex.search(done.stdout, timeout=REGEX_SECONDS) is not None
        except TimeoutError:
            clauses.append(f'stdout regex "{stdout_pattern}" took longer than {REGEX_SECONDS:g} s')
            passed = False
        else:
            if matched:
                clauses.append(f'stdout matched regex "{stdout_pattern}"')
            else:
                clauses.append(f'stdout did not match regex "{stdout_pattern}"')
                passed = False
    if done.limit == "memory_bytes":
        clauses.append(
            f"{sandbox.describe(done.limit, limits).replace('it ran', 'it may have run')}"
        )
    if done.output_truncated:
        clauses.append(f"output beyond {limits.output_bytes} bytes was not kept")
    if not passed and done.stderr.strip():
        excerpt = " ".join(done.stderr.split())[:STDERR_EVIDENCE_CHARS]
        clauses.append(f'stderr: "{excerpt}"')
    return {
        "passed": passed,
        "evidence": "; ".join(clauses),
        "actual_exit_code": None if done.timed_out or stopped else code,
        "stdout": cap_bytes(done.stdout),
        "stderr": cap_bytes(done.stderr),
    }


def cap_bytes(text: str, limit: int = CAPTURE_BYTES) -> str:
    """The start of `text`, at most `limit` bytes of UTF-8, never cutting a character."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode("utf-8", errors="ignore")
