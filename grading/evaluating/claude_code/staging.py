"""Staging the skill under test as a project skill of the run's task folder."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from grading.sandbox import hostfiles
from grading.sandbox.hostfiles import SKILL_MD_MAX_BYTES
from runs.importing import ImportFailure, parse_skill_md

from ..harness import Dispatch
from ..plan import FRONT_MATTER, SkillVersion
from ..skillgit import export_skill_at


def stage_skill(dispatch: Dispatch, skills_dir: str = ".claude/skills") -> Path | None:
    """Copy the condition's skill (SKILL.md and its other files, not evals/) to
    `<skills_dir>/<name>/` (Claude Code's `.claude/skills/`; another harness names the
    folder its CLI discovers project skills in), and each sibling beside it; the staged
    folder of the skill under test, None in a condition without a skill.

    The folder is the skill's name (checked by the plan to be one folder name), as the CLI
    names a skill by its folder. The skill folder is its author's, so it is copied by
    `hostfiles`: regular files and folders, a symbolic link recreated as a link (which the
    host never follows and the sandbox resolves only among what it can see), anything else
    refused. The staged SKILL.md says the version's description (a trigger run tests one
    that SKILL.md does not hold; the skill folder itself is never written). Each is listed in
    the task's `.git/info/exclude`, so `git add` (hence diff_scope) and `git status` leave it
    out: what the harness staged is not what the agent changed.
    """
    skill = dispatch.skill
    if skill is None:
        return None
    target = _stage(dispatch.env, skill, dispatch.skill_dir, skills_dir)
    for sibling in dispatch.siblings:
        _stage(dispatch.env, sibling, Path(sibling.path).parent, skills_dir)
    return target


def _stage(env: Path, skill: SkillVersion, skill_dir: Path | None, skills_dir: str) -> Path:
    folder = PurePosixPath(skills_dir)
    assert not folder.is_absolute() and ".." not in folder.parts, skills_dir
    target = env.joinpath(*folder.parts, skill.name)
    if target.is_symlink() or target.exists():  # a fixture of that name: the staged copy wins
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink()
    source = Path(skill.path)
    if hostfiles.entry_kind(source.parent, source.name) is not None:
        root = source.parent
        hostfiles.copy_tree(root, target, skip=_skill_files(root, env), links="copy")
    elif skill.path.endswith(":SKILL.md") and skill_dir is not None:
        _export_from_git(skill_dir, skill.path.removesuffix(":SKILL.md"), target)
    staged = target.relative_to(env) / "SKILL.md"
    if hostfiles.entry_kind(env, staged) == "a regular file":
        text = hostfiles.read_whole(env, staged, max_bytes=SKILL_MD_MAX_BYTES, what="a SKILL.md")
        written = staged_text(text.decode("utf-8", errors="replace"), skill)
    else:
        # Only the text is known (a baseline read some other way): SKILL.md from it.
        front = f"---\nname: {skill.name}\ndescription: {json.dumps(skill.description)}\n---\n"
        written = front + skill.body
    if written is not None:
        hostfiles.write(target, "SKILL.md", written.encode("utf-8"))
    exclude = env / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with exclude.open("a", encoding="utf-8") as handle:
        handle.write(f"/{folder}/{skill.name}/\n")
    return target


#: A top-level key of YAML front matter; the lines after it, to the next, continue its value.
_KEY = re.compile(r"^[A-Za-z0-9_-]+[ \t]*:")
_DESCRIPTION = re.compile(r"^description[ \t]*:")


def staged_text(text: str, skill: SkillVersion) -> str | None:
    """The SKILL.md to stage for `skill` from a copy's `text`: None when it already says
    the version's description, else the text with its `description:` replaced (or added)
    and every other line of its front matter kept (`allowed-tools`, `license`…)."""
    try:
        _, description = parse_skill_md(text, display="SKILL.md")
    except ImportFailure:
        description = None
    if description == skill.description:
        return None
    line = f"description: {json.dumps(skill.description, ensure_ascii=False)}"
    match = FRONT_MATTER.match(text)
    if match is None:
        return f"---\nname: {skill.name}\n{line}\n---\n{text}"
    lines = match.group(0).split("\n")
    closing = max(i for i, part in enumerate(lines) if part.rstrip() == "---")
    kept: list[str] = []
    in_description = False
    for part in lines[1:closing]:
        if _KEY.match(part):
            in_description = bool(_DESCRIPTION.match(part))
            if in_description:
                continue
        elif in_description:
            continue  # the old description's continuation lines
        kept.append(part)
    head = ["---", *kept, line, *lines[closing:]]
    return "\n".join(head) + text[match.end() :]


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
