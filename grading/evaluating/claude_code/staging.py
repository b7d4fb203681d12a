"""Staging the skill under test as a project skill of the run's task folder."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from grading.sandbox import hostfiles

from ..harness import Dispatch
from ..skillgit import export_skill_at


def stage_skill(dispatch: Dispatch) -> Path | None:
    """Copy the condition's skill (SKILL.md and its other files, not evals/) to
    `.claude/skills/<name>/`; the staged folder, None in a condition without a skill.

    The folder is the skill's name (checked by the plan to be one folder name), as the CLI
    names a skill by its folder. The skill folder is its author's, so it is copied by
    `hostfiles`: regular files and folders, a symbolic link recreated as a link (which the
    host never follows and the sandbox resolves only among what it can see), anything else
    refused. It is listed in the task's `.git/info/exclude`, so `git add` (hence diff_scope)
    and `git status` leave it out: what the harness staged is not what the agent changed.
    """
    skill = dispatch.skill
    if skill is None:
        return None
    target = dispatch.env / ".claude" / "skills" / skill.name
    if target.is_symlink() or target.exists():  # a fixture of that name: the staged copy wins
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink()
    source = Path(skill.path)
    if hostfiles.entry_kind(source.parent, source.name) is not None:
        root = source.parent
        hostfiles.copy_tree(root, target, skip=_skill_files(root, dispatch.env), links="copy")
    elif skill.path.endswith(":SKILL.md") and dispatch.skill_dir is not None:
        _export_from_git(dispatch.skill_dir, skill.path.removesuffix(":SKILL.md"), target)
    if hostfiles.entry_kind(dispatch.env, target.relative_to(dispatch.env) / "SKILL.md") != (
        "a regular file"
    ):
        # Only the text is known (a baseline read some other way): SKILL.md from it.
        front = f"---\nname: {skill.name}\ndescription: {json.dumps(skill.description)}\n---\n"
        hostfiles.write(target, "SKILL.md", (front + skill.body).encode("utf-8"))
    exclude = dispatch.env / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with exclude.open("a", encoding="utf-8") as handle:
        handle.write(f"/.claude/skills/{skill.name}/\n")
    return target


def _skill_files(root: Path, env: Path) -> Callable[[PurePosixPath], bool]:
    """copy_tree's filter: not evals/ or .git, nor a folder holding the task folder (a
    workspace kept inside the skill's folder would otherwise be copied into itself)."""
    try:
        task = PurePosixPath(env.resolve().relative_to(root.resolve()).as_posix())
    except ValueError:
        task = None

    def skip(path: PurePosixPath) -> bool:
        if path.name == ".git" or path == PurePosixPath("evals"):
            return True
        return task is not None and (task == path or task.is_relative_to(path))

    return skip


def _export_from_git(skill_dir: Path, ref: str, target: Path) -> None:
    """The skill folder as it was at `ref` (revision mode's git baseline), evals/ left out.

    Read from git objects, regular files only (skillgit): `git archive` runs the smudge
    filters the repository's own attributes and config name.
    """
    export_skill_at(skill_dir, ref, target)
