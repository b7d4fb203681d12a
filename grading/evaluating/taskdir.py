"""Task folders: a git repository per run whose first commit holds the eval's fixture files.

The baseline commit is what `diff_scope` measures against. Building it (git init, add,
commit) costs three processes, so it is built once per eval as a template and each run gets
a copy of the template, which is a plain directory copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path, PurePosixPath

from grading.graders.command import command_environment
from grading.sandbox import hostfiles

GIT_IDENTITY = [
    "-c",
    "user.name=evalsite runevals",
    "-c",
    "user.email=runevals@evalsite.invalid",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
]


class FixtureError(Exception):
    """An eval names a fixture file that cannot be used; the message names it."""


def fixture_sources(
    files: list[str], *, evals_dir: Path, files_root: str | None = None
) -> list[tuple[Path, PurePosixPath]]:
    """(source file, destination relative to the task folder) for an eval's `files`.

    `files_root` is relative to evals/ without `..`, as the schema says, and every source
    must be a regular file reached without a link (`hostfiles`): the skill folder is its
    author's, and a fixture linked to `~/.ssh/id_rsa` would go to the agent and the API.
    """
    try:
        root = hostfiles.relative_parts(files_root or "", shown=files_root)
    except hostfiles.UntrustedPath as exc:
        raise FixtureError(f"files_root {exc} (relative to evals/, as the schema says)") from None
    pairs = []
    for declared in files:
        try:
            relative = PurePosixPath(*hostfiles.relative_parts(declared))
        except hostfiles.UntrustedPath:
            relative = PurePosixPath()
        if not relative.parts:
            raise FixtureError(f"fixture path {declared!r} must be relative, without '..'")
        if relative.parts[0].lower() == ".git":
            raise FixtureError(f"fixture path {declared!r} may not write the task's .git")
        inside = PurePosixPath(*root, *relative.parts)
        try:
            found = hostfiles.entry_kind(evals_dir, inside)
        except hostfiles.UntrustedPath as exc:
            raise FixtureError(f"fixture file {declared!r}: {exc}") from None
        if found is None:
            raise FixtureError(f"fixture file {declared!r} not found at {evals_dir / inside}")
        if found != "a regular file":
            raise FixtureError(
                f"fixture file {declared!r} is {found} ({evals_dir / inside}); refused"
            )
        pairs.append((evals_dir / inside, relative))
    return pairs


def git(folder: Path, *args: str) -> str:
    """git on the host in a template runevals made: its config is ours alone. The folder
    holds the skill author's fixtures, so neither HOME's `.gitconfig` nor XDG's
    `.config/git/config` may be read from it (a fixture `.gitconfig` defining a clean filter
    ran its command on `git add`)."""
    done = subprocess.run(
        ["git", *GIT_IDENTITY, *args],
        cwd=folder,
        env=command_environment(
            {
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": os.devnull,
                "GIT_ATTR_NOSYSTEM": "1",
                "HOME": os.devnull,
                "XDG_CONFIG_HOME": os.devnull,
            }
        ),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def build_template(
    folder: Path, fixtures: list[tuple[Path, PurePosixPath]], *, evals_dir: Path
) -> str:
    """Make `folder` a git repository whose baseline commit holds the fixtures (each under
    `evals_dir`, copied without following a link); its sha."""
    folder.mkdir(parents=True)
    for source, destination in fixtures:
        try:
            hostfiles.copy_file(evals_dir, source.relative_to(evals_dir), folder, destination)
        except (ValueError, hostfiles.UntrustedPath) as exc:
            raise FixtureError(f"fixture file {str(destination)!r}: {exc}") from None
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
