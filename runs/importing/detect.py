"""Finding what a folder holds, so the user never has to say which layout it is."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .tree import is_skipped_dir

MAX_DEPTH = 6
#: eval-magic keeps copies of old SKILL.md files here; they are provenance, not skills.
SNAPSHOT_DIRS = {"snapshots"}


@dataclass(frozen=True)
class Source:
    """One importable unit found under a path."""

    kind: str  # "skill", "eval-magic", "baseline" or "skill-creator"
    path: Path
    #: The skill the unit belongs to, as the layout names it (folder names).
    skill_name: str
    #: The source's own name for an iteration ("iteration-4"); "" for skill folders.
    label: str = ""


def natural_key(text: str) -> list[object]:
    """Sort key that puts iteration-2 before iteration-10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _subdirs(path: Path) -> list[Path]:
    with os.scandir(path) as entries:
        dirs = [
            Path(e.path)
            for e in entries
            if e.is_dir(follow_symlinks=False)
            and not is_skipped_dir(e.name)
            and not e.name.startswith(".")
            and e.name not in SNAPSHOT_DIRS
        ]
    return sorted(dirs, key=lambda p: natural_key(p.name))


def _is_eval_magic_benchmark(path: Path) -> bool:
    # An eval-magic benchmark names its two conditions; skill-creator's has runs[]/metadata.
    with open(path, "rb") as handle:
        return b'"conditions_compared"' in handle.read(1 << 20)


def skill_creator_skill_name(folder: Path) -> str:
    name = folder.name
    return name.removesuffix("-workspace") if name.endswith("-workspace") else name


def detect(path: Path, *, depth: int = 0) -> list[Source]:
    """Every importable unit under `path` (a folder), outermost layouts first."""
    if (path / "conditions.json").is_file():
        return [Source("eval-magic", path, path.resolve().parent.name, path.name)]
    if path.name == "baseline" and path.parent.name == "evals" and (path / "grading").is_dir():
        skill = path.parent.parent
        return [Source("baseline", path, skill.resolve().name, "baseline")]
    if (path / "SKILL.md").is_file() or (path / "evals" / "evals.json").is_file():
        found = [Source("skill", path, path.resolve().name)]
        baseline = path / "evals" / "baseline"
        if (baseline / "grading").is_dir():
            found.append(Source("baseline", baseline, path.resolve().name, "baseline"))
        return found
    subdirs = _subdirs(path)
    has_eval_dirs = any(d.name.startswith("eval-") for d in subdirs)
    benchmark = path / "benchmark.json"
    if has_eval_dirs or (benchmark.is_file() and not _is_eval_magic_benchmark(benchmark)):
        skill = skill_creator_skill_name(path.resolve().parent)
        return [Source("skill-creator", path, skill, path.name)]
    if depth >= MAX_DEPTH:
        return []
    found = []
    for subdir in subdirs:
        found.extend(detect(subdir, depth=depth + 1))
    return found
