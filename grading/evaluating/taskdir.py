"""Task folders: a git repository per run whose first commit holds the eval's fixture files.

The baseline commit is what `diff_scope` measures against. Building it (git init, add,
commit) costs three processes, so it is built once per eval as a template and each run gets
a copy of the template, which is a plain directory copy.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path, PurePosixPath

from .tools import safe_environment

GIT_IDENTITY = [
    "-c",
    "user.name=evalsite runevals",
    "-c",
    "user.email=runevals@evalsite.invalid",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.hooksPath=/dev/null",
]


class FixtureError(Exception):
    """An eval names a fixture file that cannot be used; the message names it."""


def fixture_sources(
    files: list[str], *, evals_dir: Path, files_root: str | None = None
) -> list[tuple[Path, PurePosixPath]]:
    """(source file, destination relative to the task folder) for an eval's `files`."""
    base = evals_dir / files_root if files_root else evals_dir
    pairs = []
    for declared in files:
        relative = PurePosixPath(declared.replace("\\", "/"))
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise FixtureError(f"fixture path {declared!r} must be relative, without '..'")
        if relative.parts[0].lower() == ".git":
            raise FixtureError(f"fixture path {declared!r} may not write the task's .git")
        source = base / relative
        if not source.is_file():
            raise FixtureError(f"fixture file {declared!r} not found at {source}")
        pairs.append((source, relative))
    return pairs


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *GIT_IDENTITY, *args],
        cwd=folder,
        env=safe_environment({"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(folder)}),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def build_template(folder: Path, fixtures: list[tuple[Path, PurePosixPath]]) -> str:
    """Make `folder` a git repository whose baseline commit holds the fixtures; its sha."""
    folder.mkdir(parents=True)
    for source, destination in fixtures:
        target = folder / destination
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    # No template: sample hooks and the like would only make every run's copy slower.
    git(folder, "init", "-q", "-b", "main", "--template=")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "--allow-empty", "-m", "evalsite baseline: eval fixtures")
    # The new branch's ref file holds the sha: no need for a fourth git process.
    return (folder / ".git" / "refs" / "heads" / "main").read_text(encoding="ascii").strip()


def copy_template(template: Path, destination: Path) -> None:
    """A fresh task folder from the template (replacing a leftover from an interrupted run)."""
    if destination.exists():
        shutil.rmtree(destination)
    shutil.copytree(template, destination, symlinks=True)
