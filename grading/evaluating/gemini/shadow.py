"""Other copies of the skill under test that Gemini CLI would discover in a run's task folder.

In a trusted workspace the CLI loads every `SKILL.md` and `*/SKILL.md` under
`.gemini/skills/` and then `.agents/skills/` (the later winning), each named by its front
matter's `name`. A fixture carrying one named like the skill under test gives the control
arm the skill, or overrides the staged copy in the treatment arm; such a copy is recorded in
the run's `skill-shadow.json` (Claude Code's file, claude_code/findings.py), which the
iteration's skill-shadow warning is made of. The task folder is the agent's and the
fixture's: it is read here without following a link, regular files only, bounded.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path, PurePosixPath
from typing import Any

from grading.sandbox import hostfiles
from grading.sandbox.hostfiles import SKILL_MD_MAX_BYTES
from runs.importing import ImportFailure, parse_skill_md

#: Where Gemini CLI 0.61 looks for a workspace's skills, in the order it loads them.
SKILL_ROOTS = (".gemini/skills", ".agents/skills")
#: How many entries of one root are looked at (a fixture of 10,000 folders is not read whole).
MAX_ENTRIES = 200


def discoverable(env: Path) -> list[tuple[str, PurePosixPath]]:
    """(name, SKILL.md path) of each skill the CLI would find in `env`."""
    found = []
    for root in SKILL_ROOTS:
        if hostfiles.entry_kind(env, root) != "a directory":
            continue
        with hostfiles.directory(env, root) as fd:
            entries = sorted(os.listdir(fd))[:MAX_ENTRIES]
        candidates = [PurePosixPath(root, "SKILL.md")] if "SKILL.md" in entries else []
        candidates += [PurePosixPath(root, entry, "SKILL.md") for entry in entries]
        for path in candidates:
            with contextlib.suppress(OSError, hostfiles.UntrustedPath, ImportFailure):
                if hostfiles.entry_kind(env, path) != "a regular file":
                    continue
                text = hostfiles.read_whole(
                    env, path, max_bytes=SKILL_MD_MAX_BYTES, what="a SKILL.md"
                ).decode("utf-8", errors="replace")
                name, _ = parse_skill_md(text, display=str(path))
                if name:
                    found.append((name.strip(), path))
    return found


def skill_shadow(env: Path, *, name: str, staged: Path | None) -> dict[str, Any]:
    """skill-shadow.json: the copies of `name` in `env` besides the one staged there."""
    ours = (staged / "SKILL.md").relative_to(env).as_posix() if staged else None
    try:
        copies = [str(p.parent) for n, p in discoverable(env) if n == name and str(p) != ours]
    except (OSError, hostfiles.UntrustedPath) as exc:  # a skills folder that is a link
        copies = [f"unreadable: {exc}"[:300]]
    return {
        "skill_name": name,
        "staged": str(staged) if staged else None,
        "other_copies": sorted(set(copies)),
        "rounds": [],
    }
