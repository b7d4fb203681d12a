"""What a cline run leaves for its iteration: other copies of the skill under test that the
CLI could discover in the task folder (`skill-shadow.json`, as claude_code/findings.py writes
it, so the iteration's warning is the same `skill_shadow_warnings`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grading.sandbox import hostfiles

from ..claude_code.findings import subject_name
from ..harness import Dispatch

#: Where Cline 3.0.65 discovers a workspace's skills, in its order: of two skills of one name
#: the first found is used, so a fixture's `.clinerules/skills/<name>/` hides the staged one.
#: Its other roots (CLINE_DIR/skills, ~/.agents/skills) are in the fresh home, empty.
WORKSPACE_SKILL_ROOTS = (".clinerules/skills", ".cline/skills", ".agents/skills")


def skill_shadow(dispatch: Dispatch, *, staged: Path | None) -> dict[str, Any]:
    """skill-shadow.json: every folder of the skill's name in the task folder's skill roots
    besides the one staged here, looked at before the CLI runs (never following a link)."""
    name = dispatch.skill.name if dispatch.skill else subject_name(dispatch)
    ours = staged.relative_to(dispatch.env).as_posix() if staged is not None else None
    others = []
    for root in WORKSPACE_SKILL_ROOTS:
        relative = f"{root}/{name}"
        if relative == ours:
            continue
        try:
            kind = hostfiles.entry_kind(dispatch.env, relative)
        except hostfiles.UntrustedPath:
            kind = "behind a symbolic link"  # the CLI, in the sandbox, would follow it
        if kind is not None:
            others.append(f"{relative} ({kind})")
    return {
        "skill_name": name,
        "staged": str(staged) if staged else None,
        "other_copies": others,
        "rounds": [],
    }
