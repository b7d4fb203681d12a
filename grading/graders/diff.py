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
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading import sandbox
from grading.sandbox import hostfiles

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
grep -c '^@@ ' "$out/patch" > "$out/hunks" || true
"""
#: The numstat of a change this large is already more than any page shows.
RAW_CAP_BYTES = 16 * 1024**2
#: git's output goes to files, not through the sandbox's 1 MiB output budget; the scratch
#: folder is writable inside the sandbox, so they are read back through `hostfiles`.
_GIT_LIMITS = sandbox.Limits(wall_seconds=120.0, cpu_seconds=120, output_bytes=64 * 1024)


def measure_diff(task_dir: Path, *, baseline: str | None = None) -> DiffMeasurement:
    """The task folder's changes against its baseline commit (DiffError when impossible).

    git runs in the sandbox: the repository's config is the agent's to write, and `git add`
    runs what it names (a clean filter, an fsmonitor hook), so it gets no more reach than
    the agent's own commands had.
    """
    if hostfiles.entry_kind(task_dir, ".git") != "a directory":
        raise DiffError(f"{task_dir} is not a git repository")
    with tempfile.TemporaryDirectory(prefix="evalsite-diff-") as scratch_dir:
        scratch = Path(scratch_dir)
        env = _git_environment(scratch / "index", task_dir=task_dir)
        index = _untouched_index(task_dir) if baseline else None
        copied = index is not None
        if index is not None:
            # The repository's index still is the baseline's: copying it spares a git process.
            Path(env["GIT_INDEX_FILE"]).write_bytes(index)
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
        try:
            raw = hostfiles.read(scratch, "raw", max_bytes=RAW_CAP_BYTES)
            patch_file = hostfiles.read(scratch, "patch", max_bytes=PATCH_CAP_BYTES)
            hunks_file = hostfiles.read(scratch, "hunks", max_bytes=64)
        except (OSError, hostfiles.UntrustedPath) as exc:
            # What the agent's git filters left in git's place is named, never followed.
            raise DiffError(f"git's output could not be read: {exc}") from None
        if raw.truncated:
            raise DiffError(f"the diff's file list is over {RAW_CAP_BYTES} bytes")
        raw_and_numstat = raw.data.decode("utf-8", errors="replace")
        patch = patch_file.data.decode("utf-8", errors="replace")

    try:
        kinds, counts = _parse_raw_numstat(raw_and_numstat)
        hunks = int(hunks_file.data.decode("ascii", errors="replace").strip() or 0)
    except ValueError:
        raise DiffError("git's output was not a diff (was it replaced during `git add`?)") from None
    files = [
        {
            "path": path,
            "status": _STATUS.get(kinds.get(path, "M"), "modified"),
            "lines_added": added,
            "lines_removed": removed,
        }
        for path, (added, removed) in counts.items()  # in git's own path order
    ]
    patch_text, truncated = _cap_patch(patch, size=patch_file.size)
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


#: A fresh index of a fixture tree is small; anything larger is not worth the shortcut.
_INDEX_CAP_BYTES = 8 * 1024**2


def _untouched_index(task_dir: Path) -> bytes | None:
    """The repository's own index when nothing but the baseline commit touched it (its
    reflog has one line), else None. Both are the agent's to replace — with a link to a
    host file, a FIFO — so they are read through `hostfiles`, and anything odd is None."""
    try:
        head_log = hostfiles.read(task_dir, ".git/logs/HEAD", max_bytes=64 * 1024)
        index = hostfiles.read(task_dir, ".git/index", max_bytes=_INDEX_CAP_BYTES)
    except (OSError, hostfiles.UntrustedPath):
        return None
    if head_log.truncated or index.truncated or head_log.data.count(b"\n") != 1:
        return None
    return index.data


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


def _cap_patch(patch: str, *, size: int) -> tuple[str, bool]:
    """The patch as read (at most PATCH_CAP_BYTES of a file of `size` bytes), marked when cut."""
    encoded = patch.encode("utf-8")
    if size <= PATCH_CAP_BYTES and len(encoded) <= PATCH_CAP_BYTES:
        return patch, False
    kept = encoded[:PATCH_CAP_BYTES].decode("utf-8", errors="ignore")
    marker = f"\n[diff.patch truncated: {size} bytes, the first {PATCH_CAP_BYTES} kept]\n"
    return kept + marker, True
