"""Staging the skill under test as a project skill of the run's task folder."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from ..harness import Dispatch
from ..skillgit import export_skill_at


def stage_skill(dispatch: Dispatch) -> Path | None:
    """Copy the condition's skill (SKILL.md and its other files, not evals/) to
    `.claude/skills/<name>/`; the staged folder, None in a condition without a skill.

    The folder is the skill's name, as the CLI names a skill by its folder. It is listed in
    the task's `.git/info/exclude`, so `git add` (hence diff_scope) and `git status` leave
    it out: what the harness staged is not what the agent changed.
    """
    skill = dispatch.skill
    if skill is None:
        return None
    target = dispatch.env / ".claude" / "skills" / skill.name
    if target.exists():  # a fixture of that name: the staged copy replaces it
        shutil.rmtree(target)
    source = Path(skill.path)
    if source.is_file():
        shutil.copytree(source.parent, target, ignore=_skill_files(source.parent, dispatch.env))
    elif skill.path.endswith(":SKILL.md") and dispatch.skill_dir is not None:
        _export_from_git(dispatch.skill_dir, skill.path.removesuffix(":SKILL.md"), target)
    if not (target / "SKILL.md").is_file():
        # Only the text is known (a baseline read some other way): SKILL.md from it.
        target.mkdir(parents=True, exist_ok=True)
        front = f"---\nname: {skill.name}\ndescription: {json.dumps(skill.description)}\n---\n"
        (target / "SKILL.md").write_text(front + skill.body, encoding="utf-8")
    exclude = dispatch.env / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with exclude.open("a", encoding="utf-8") as handle:
        handle.write(f"/.claude/skills/{skill.name}/\n")
    return target


def _skill_files(root: Path, env: Path) -> Callable[[str, list[str]], set[str]]:
    """copytree's filter: not evals/ or .git, nor a folder holding the task folder (a
    workspace kept inside the skill's folder would otherwise be copied into itself)."""
    task = env.resolve()

    def skip(folder: str, names: list[str]) -> set[str]:
        hidden = {n for n in names if n == ".git" or task.is_relative_to(Path(folder, n).resolve())}
        return hidden | ({"evals"} if Path(folder) == root else set())

    return skip


def _export_from_git(skill_dir: Path, ref: str, target: Path) -> None:
    """The skill folder as it was at `ref` (revision mode's git baseline), evals/ left out.

    Read from git objects, regular files only (skillgit): `git archive` runs the smudge
    filters the repository's own attributes and config name.
    """
    export_skill_at(skill_dir, ref, target)
