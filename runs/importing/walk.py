"""One walk of an import's folders: each folder's regular files and sub-folders, never a
link, never a run's artefacts or tool state, and not below what is already known from the
folder itself (`settled`)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..names import natural_key
from .tree import ARTEFACT_DIR, SKIPPED_DIR_PREFIXES, SKIPPED_DIRS

#: How deep below an import's root the walk looks (a plugin's skill's evals' workspace's
#: iteration's run is 10 folders down).
MAX_DEPTH = 16
#: eval-magic keeps copies of old SKILL.md files in `snapshots/`; skill-creator copies the old
#: skill into `skill-snapshot*/` in revision mode. Both are provenance, not skills.
SNAPSHOT_DIRS = {"snapshots"}
SNAPSHOT_PREFIX = "skill-snapshot"
#: Hidden folders that hold skills or results; every other hidden folder is tool state.
HIDDEN_SEARCHED = {".claude", ".eval-magic"}
RUN_DIR = re.compile(r"^run-(\d+)$")


@dataclass
class Listing:
    """One folder as the walk saw it: its regular files and its sub-folders (no links)."""

    path: Path
    relative: tuple[str, ...]
    files: frozenset[str]
    dirs: tuple[str, ...]


def is_snapshot(name: str) -> bool:
    return name in SNAPSHOT_DIRS or name.startswith(SNAPSHOT_PREFIX)


def entered(name: str) -> bool:
    """Whether the walk lists a sub-folder at all: never VCS, caches, agent task folders or a
    run's artefacts (an agent may write anything there, a `grading.json` included)."""
    return not (
        name in SKIPPED_DIRS or name.startswith(SKIPPED_DIR_PREFIXES) or name == ARTEFACT_DIR
    )


def settled(listing: Listing) -> bool:
    """Whether what is below a folder is already known from the folder itself, so the walk
    need not list it: an eval-magic iteration (its reader reads the whole folder), or an eval
    with its eval_metadata.json (its runs are the reader's). Thousands of run folders are
    then never listed twice."""
    if "conditions.json" in listing.files:
        return True
    return "eval_metadata.json" in listing.files and not holds_runs(listing)


def holds_runs(listing: Listing) -> bool:
    """A folder that is itself a configuration or a run: run files, or `run-<k>/` folders."""
    files = listing.files
    return (
        "grading.json" in files
        or "timing.json" in files
        or any(RUN_DIR.match(d) for d in listing.dirs)
    )


def walk(root: Path) -> dict[Path, Listing]:
    """Every folder under `root` (to MAX_DEPTH), without following a link."""
    folders: dict[Path, Listing] = {}
    stack: list[tuple[Path, tuple[str, ...]]] = [(root, ())]
    while stack:
        path, relative = stack.pop()
        files: list[str] = []
        dirs: list[str] = []
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            dirs.append(entry.name)
                        elif entry.is_file(follow_symlinks=False):
                            files.append(entry.name)
                    except OSError:
                        continue
        except OSError:
            continue
        dirs.sort(key=natural_key)
        listing = folders[path] = Listing(path, relative, frozenset(files), tuple(dirs))
        if len(relative) < MAX_DEPTH and not settled(listing):
            stack.extend((path / d, (*relative, d)) for d in reversed(dirs) if entered(d))
    return folders


def excluded(listing: Listing) -> bool:
    """Inside a snapshot or a hidden folder other than HIDDEN_SEARCHED: never imported."""
    return any(is_snapshot(p) for p in listing.relative) or any(
        p[:1] == "." and p not in HIDDEN_SEARCHED for p in listing.relative
    )


def exclusion(listing: Listing) -> str:
    if any(is_snapshot(p) for p in listing.relative):
        return "inside a snapshot folder, which holds copies of old skills, not results"
    return "inside a hidden folder, which holds tool state, not results"


def outermost_excluded(path: Path, listing: Listing) -> Path:
    """The snapshot or hidden folder itself: one line per excluded tree."""
    for index, part in enumerate(listing.relative):
        if is_snapshot(part) or (part[:1] == "." and part not in HIDDEN_SEARCHED):
            return Path(*path.parts[: len(path.parts) - len(listing.relative) + index + 1])
    return path
