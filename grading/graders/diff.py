"""`diff_scope`: how much of the task folder the agent changed, measured by git.

The task folder is a git repository whose first commit (or `refs/eval-magic/baseline`, when
the harness marks one) holds the eval's fixtures. The whole working tree — untracked files
included, the codebase's own .gitignore honoured — is staged into a throwaway index seeded
from the baseline, and that index is diffed against the baseline. The repository's own
index, refs and history are never touched, so whatever the agent did with git (staging,
committing, switching branches) does not hide a change.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading.evaluating import sandbox

from .verdict import Verdict

GRADER = "diff_scope"
BASELINE_REF = "refs/eval-magic/baseline"
PATCH_NAME = "diff.patch"
#: diff.patch is cut here (with a marker line) so one runaway run cannot fill the disk.
PATCH_CAP_BYTES = 1024 * 1024
_STATUS = {"A": "added", "M": "modified", "D": "deleted", "T": "modified"}


class DiffError(Exception):
    """The task folder's diff could not be measured; the message says why."""


@dataclass
class DiffMeasurement:
    record: dict[str, Any]  # diff-scope.json, valid against diff-scope.schema.json
    patch: str  # diff.patch, already capped

    @property
    def files_touched(self) -> int:
        return int(self.record["files_touched"])

    @property
    def lines_changed(self) -> int:
        return int(self.record["lines_added"]) + int(self.record["lines_removed"])


#: What measure_diff runs, as one sandboxed shell: $1 the baseline ("": find it), $2 "copy"
#: when the index was copied from the repository's own, $3 the scratch folder. One sandbox
#: start instead of four: each costs ~16 ms, more than the diffing.
_MEASURE = r"""
set -e
g() { git -c safe.directory='*' -c core.quotepath=off -c core.autocrlf=false \
        -c core.fsmonitor=false -c core.hooksPath=/dev/null "$@"; }
base=$1 copied=$2 out=$3
if [ -z "$base" ]; then
    base=$(g rev-parse --verify --quiet "refs/eval-magic/baseline^{commit}" || true)
    [ -n "$base" ] || base=$(g rev-list --max-parents=0 HEAD | tail -n 1)
fi
[ -n "$base" ] || { echo "the task folder has no baseline commit" >&2; exit 3; }
[ "$copied" = copy ] || g read-tree "$base"
g add --all -- .
set -- diff --cached --no-renames --no-ext-diff --no-textconv "$base"
g "$@" --raw --numstat -z > "$out/raw"
g "$@" -U0 --no-color --src-prefix=a/ --dst-prefix=b/ > "$out/patch"
"""
#: git's output goes to files, not through the sandbox's 1 MiB output budget.
_GIT_LIMITS = sandbox.Limits(wall_seconds=120.0, cpu_seconds=120, output_bytes=64 * 1024)


def measure_diff(task_dir: Path, *, baseline: str | None = None) -> DiffMeasurement:
    """The task folder's changes against its baseline commit (DiffError when impossible).

    git runs in the sandbox: the repository's config is the agent's to write, and `git add`
    runs what it names (a clean filter, an fsmonitor hook), so it gets no more reach than
    the agent's own commands had.
    """
    if not (task_dir / ".git").exists():
        raise DiffError(f"{task_dir} is not a git repository")
    with tempfile.TemporaryDirectory(prefix="evalsite-diff-") as scratch_dir:
        scratch = Path(scratch_dir)
        env = _git_environment(scratch / "index", task_dir=task_dir)
        own_index = task_dir / ".git" / "index"
        copied = bool(baseline) and own_index.is_file() and not _agent_used_git(task_dir)
        if copied:
            # The repository's index still is the baseline's: copying it spares a git process.
            shutil.copyfile(own_index, env["GIT_INDEX_FILE"])
        try:
            done = sandbox.run(
                [
                    "sh",
                    "-c",
                    _MEASURE,
                    "measure",
                    baseline or "",
                    "copy" if copied else "",
                    str(scratch),
                ],
                folder=task_dir,
                env=env,
                limits=_GIT_LIMITS,
                binds=[(scratch, scratch)],
                unsafe=sandbox.is_unsandboxed(),
            )
        except (OSError, sandbox.SandboxError) as exc:
            raise DiffError(f"could not run git: {exc}") from None
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines()
            raise DiffError(f"git failed: {lines[-1] if lines else done.limit or done.returncode}")
        raw_and_numstat = _read(scratch / "raw")
        patch = zero_context = _read(scratch / "patch")

    kinds, counts = _parse_raw_numstat(raw_and_numstat)
    files = [
        {
            "path": path,
            "status": _STATUS.get(kinds.get(path, "M"), "modified"),
            "lines_added": added,
            "lines_removed": removed,
        }
        for path, (added, removed) in counts.items()  # in git's own path order
    ]
    hunks = sum(1 for line in zero_context.splitlines() if line.startswith("@@ "))
    patch_text, truncated = _cap_patch(patch)
    record = {
        "files_touched": len(files),
        "lines_added": sum(f["lines_added"] for f in files),
        "lines_removed": sum(f["lines_removed"] for f in files),
        "hunks": hunks,
        "files": files,
        "patch": {
            "path": PATCH_NAME,
            "bytes": len(patch_text.encode("utf-8")),
            "truncated": truncated,
        },
    }
    return DiffMeasurement(record=record, patch=patch_text)


def diff_scope(
    assertion: Mapping[str, Any],
    *,
    task_dir: Path | None = None,
    measurement: DiffMeasurement | None = None,
    baseline: str | None = None,
) -> tuple[Verdict, DiffMeasurement | None]:
    """(verdict, the measurement) for one `diff_scope` assertion.

    Pass `measurement` to reuse one taken earlier (runevals measures once per run, before
    any command_check's setup files land in the folder).
    """
    assertion_id = str(assertion["id"])
    if measurement is None:
        if task_dir is None:
            raise ValueError("diff_scope needs a task_dir or a measurement")
        try:
            measurement = measure_diff(task_dir, baseline=baseline)
        except DiffError as exc:
            # Not the agent's fault; confidence 0 sends it to a person.
            evidence = f"could not measure the diff: {exc}"
            return Verdict(assertion_id, False, evidence, confidence=0.0, grader=GRADER), None
    record = measurement.record
    clauses, passed = [], True
    max_files = assertion.get("max_files_touched")
    if max_files is not None:
        ok = measurement.files_touched <= max_files
        passed &= ok
        clauses.append(f"files touched: {measurement.files_touched} {_cmp(ok)} {max_files}")
    max_lines = assertion.get("max_lines_changed")
    if max_lines is not None:
        ok = measurement.lines_changed <= max_lines
        passed &= ok
        clauses.append(
            f"lines changed: {measurement.lines_changed} {_cmp(ok)} {max_lines} "
            f"({record['lines_added']} added + {record['lines_removed']} removed)"
        )
    clauses.append(f"hunks: {record['hunks']}")
    return Verdict(assertion_id, passed, "; ".join(clauses), grader=GRADER), measurement


def _cmp(ok: bool) -> str:
    return "<=" if ok else ">"


def _read(path: Path) -> str:
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", errors="replace")


def _agent_used_git(task_dir: Path) -> bool:
    """Whether anything but the baseline commit touched the repository (its reflog grew)."""
    head_log = task_dir / ".git" / "logs" / "HEAD"
    try:
        return len(head_log.read_text(encoding="utf-8", errors="replace").splitlines()) != 1
    except OSError:
        return True


def _git_environment(index: Path, *, task_dir: Path) -> dict[str, str]:
    """The sandbox's allow-list, plus what makes git deterministic and keeps it here."""
    return sandbox.allowed_environment(
        {
            "GIT_INDEX_FILE": str(index),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            # Never fall through to a repository the task folder happens to sit in.
            "GIT_CEILING_DIRECTORIES": str(task_dir.resolve().parent),
            "LC_ALL": "C",
        },
        home=task_dir,
    )


def _parse_raw_numstat(output: str) -> tuple[dict[str, str], dict[str, tuple[int, int]]]:
    """({path: status letter}, {path: (added, removed)}) from `--raw --numstat -z`.

    Raw entries are ":<modes> <ids> <status>" then the path; numstat entries are
    "<added>\t<removed>\t<path>". Without renames each entry names one path. A binary
    file's "-" counts count as 0 lines.
    """
    kinds: dict[str, str] = {}
    counts: dict[str, tuple[int, int]] = {}
    fields = output.split("\0")
    i = 0
    while i < len(fields):
        field = fields[i]
        if field.startswith(":"):
            kinds[fields[i + 1]] = field.split()[-1][0]
            i += 2
            continue
        if field:
            added, removed, path = field.split("\t", 2)
            counts[path] = (_count(added), _count(removed))
        i += 1
    return kinds, counts


def _count(field: str) -> int:
    return 0 if field == "-" else int(field)


def _cap_patch(patch: str) -> tuple[str, bool]:
    encoded = patch.encode("utf-8")
    if len(encoded) <= PATCH_CAP_BYTES:
        return patch, False
    kept = encoded[:PATCH_CAP_BYTES].decode("utf-8", errors="ignore")
    marker = f"\n[diff.patch truncated: {len(encoded)} bytes, the first {PATCH_CAP_BYTES} kept]\n"
    return kept + marker, True
