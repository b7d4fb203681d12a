"""Other copies of the skill under test that Codex could discover in a run's task folder.

Codex lists every skill of the task folder's `.agents/skills/` (its cwd is the repository's
root, so no folder above it counts; its home's are fresh and empty). An eval's fixtures may
hold a copy there: in a condition without the skill the agent could then load it anyway, and
in one with it a second copy under another folder could be listed beside the staged one.
Codex names a skill by its front matter's `name`, so a folder of that name or a SKILL.md
naming it is a copy. The folder is the eval author's: it is read without following links
(hostfiles), and a link where a folder should be is reported as a possible copy, not read.
The run's `skill-shadow.json` has Claude Code's shape, so the iteration's warning is the
same function's (claude_code.findings.skill_shadow_warnings).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

from grading.sandbox import hostfiles
from grading.sandbox.hostfiles import SKILL_MD_MAX_BYTES
from runs.importing import ImportFailure, parse_skill_md

#: Entries of `.agents/skills/` looked at; a fixture with more is not a real skill set.
MAX_ENTRIES = 200


def other_copies(env: Path, skills_dir: str, *, name: str, staged: Path | None) -> list[str]:
    """The task folder's skills (relative paths) that Codex would list as `name`, besides
    `staged`."""
    try:
        with hostfiles.directory(env, skills_dir) as fd:
            entries = sorted(os.listdir(fd))[:MAX_ENTRIES]
    except FileNotFoundError:
        return []
    except (OSError, hostfiles.UntrustedPath):
        return [f"{skills_dir} (not a plain folder: not read)"]
    copies = []
    for entry in entries:
        folder = PurePosixPath(skills_dir, entry)
        if staged is not None and entry == staged.name:
            continue
        if entry == name:
            copies.append(str(folder))
            continue
        if _names(env, folder / "SKILL.md") == name:
            copies.append(f"{folder} (named {name!r} in its SKILL.md)")
    return copies


def _names(env: Path, skill_md: PurePosixPath) -> str | None:
    """The `name` a SKILL.md's front matter gives, None if unreadable or absent."""
    try:
        if hostfiles.entry_kind(env, skill_md) != "a regular file":
            return None
        text = hostfiles.read_whole(env, skill_md, max_bytes=SKILL_MD_MAX_BYTES, what="SKILL.md")
        found, _ = parse_skill_md(text.decode("utf-8", errors="replace"), display=str(skill_md))
    except (OSError, hostfiles.UntrustedPath, ImportFailure):
        return None
    return found


def skill_shadow(env: Path, skills_dir: str, *, name: str, staged: Path | None) -> dict[str, Any]:
    """skill-shadow.json for one run, as the claude-code harness writes it."""
    return {
        "skill_name": name,
        "staged": str(staged) if staged else None,
        "other_copies": other_copies(env, skills_dir, name=name, staged=staged),
        "rounds": [],
    }
