"""Finding what a folder holds, so the user never has to say which layout it is.

The walk recognises, outermost first:
- an eval-magic iteration (`conditions.json`), a promoted baseline (`evals/baseline/grading/`);
- a skill folder (`SKILL.md` or `evals/evals.json`), and inside it its `iteration-*/`,
  `*-workspace/` and `evals/baseline/`;
- a skill-creator iteration: `eval-*/` folders, a skill-creator `benchmark.json`, the older
  `runs/eval-*/` layout, or descriptively named eval folders holding `eval_metadata.json` or
  `<configuration>/[run-<k>/]grading.json`;
- `.claude/skills/` and eval-magic's legacy `.eval-magic/` workspace, although hidden.
A `<x>-workspace/` beside a skill folder `<x>/` belongs to that skill. Every folder holding
result files that no unit covers is reported with the reason, never dropped in silence.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .tree import SKIPPED_DIR_PREFIXES, SKIPPED_DIRS

MAX_DEPTH = 8
#: eval-magic keeps copies of old SKILL.md files in `snapshots/`; skill-creator copies the old
#: skill into `skill-snapshot*/` in revision mode. Both are provenance, not skills.
SNAPSHOT_DIRS = {"snapshots"}
SNAPSHOT_PREFIX = "skill-snapshot"
#: Hidden folders that hold skills or results; every other hidden folder is tool state.
HIDDEN_SEARCHED = {".claude", ".eval-magic"}
#: Files that only a results folder holds: a folder with one of these is never skipped quietly.
RESULT_FILES = {"grading.json", "benchmark.json", "conditions.json", "eval_metadata.json"}
RUN_DIR = re.compile(r"^run-(\d+)$")
#: Folders inside an eval folder that are never configurations.
NOT_CONFIGURATIONS = {"outputs", "inputs", "files"}


@dataclass(frozen=True)
class Source:
    """One importable unit found under a path."""

    kind: str  # "skill", "eval-magic", "baseline" or "skill-creator"
    path: Path
    #: The skill's name as the folders say it: the last resort of the identity rule.
    folder_name: str
    #: The source's own name for an iteration ("iteration-4"); "" for skill folders.
    label: str = ""
    #: The skill folder this unit belongs to (it sits inside it, or is `<x>-workspace/`
    #: beside `<x>/`); its SKILL.md and evals.json name the skill and define its evals.
    skill_folder: Path | None = None


@dataclass
class Detection:
    sources: list[Source] = field(default_factory=list)
    #: (folder, reason) for folders holding result files that no source covers.
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def natural_key(text: str) -> list[object]:
    """Sort key that puts iteration-2 before iteration-10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def is_snapshot(name: str) -> bool:
    return name in SNAPSHOT_DIRS or name.startswith(SNAPSHOT_PREFIX)


def _searched(name: str) -> bool:
    """Whether the walk enters a folder of this name at all."""
    if name in HIDDEN_SEARCHED:
        return True
    return not (name in SKIPPED_DIRS or name.startswith(SKIPPED_DIR_PREFIXES) or name[:1] == ".")


def _subdirs(path: Path) -> list[Path]:
    try:
        with os.scandir(path) as entries:
            dirs = [
                Path(e.path)
                for e in entries
                if e.is_dir(follow_symlinks=False) and _searched(e.name)
            ]
    except OSError:
        return []
    return sorted(dirs, key=lambda p: natural_key(p.name))


def is_skill_folder(path: Path) -> bool:
    return (path / "SKILL.md").is_file() or (path / "evals" / "evals.json").is_file()


def _is_eval_magic_benchmark(path: Path) -> bool:
    # An eval-magic benchmark names its two conditions; skill-creator's has runs[]/metadata.
    with open(path, "rb") as handle:
        return b'"conditions_compared"' in handle.read(1 << 20)


def workspace_folder_name(folder: Path) -> str:
    """A skill's name as a workspace folder gives it: `<x>-workspace` names `x`."""
    name = folder.name
    return name.removesuffix("-workspace") if name.endswith("-workspace") else name


def is_eval_folder(path: Path) -> bool:
    """A skill-creator eval folder, whatever its name: `eval-*`, or one holding
    `eval_metadata.json` or `<configuration>/[run-<k>/]grading.json`."""
    if RUN_DIR.match(path.name) or path.name in NOT_CONFIGURATIONS:
        return False
    if path.name.startswith("eval-") or (path / "eval_metadata.json").is_file():
        return True
    for config in _subdirs(path):
        if RUN_DIR.match(config.name) or config.name in NOT_CONFIGURATIONS:
            continue
        if (config / "grading.json").is_file():
            return True
        if any(RUN_DIR.match(d.name) and (d / "grading.json").is_file() for d in _subdirs(config)):
            return True
    return False


def _is_skill_creator_iteration(path: Path) -> bool:
    """`eval-*/` folders, a skill-creator benchmark.json, or the older `runs/eval-*/`; eval
    folders named otherwise count only in an `iteration-*` folder (skill-creator numbers its
    iterations so), or any folder with a `<x>/<y>/grading.json` would pass for one."""
    benchmark = path / "benchmark.json"
    if benchmark.is_file() and not _is_eval_magic_benchmark(benchmark):
        return True
    subdirs = _subdirs(path)
    if any(d.name.startswith("eval-") or (d / "eval_metadata.json").is_file() for d in subdirs):
        return True
    if (path / "runs").is_dir() and any(is_eval_folder(d) for d in _subdirs(path / "runs")):
        return True
    return path.name.startswith("iteration") and any(is_eval_folder(d) for d in subdirs)


def _eval_magic_folder_name(path: Path) -> str:
    """eval-magic names the skill by the folder holding its iterations; the legacy
    `.eval-magic/` workspace sits inside the project, so look past it."""
    parent = path.resolve().parent
    if parent.name == ".eval-magic":
        parent = parent.parent
    return parent.name


def detect(path: Path) -> Detection:
    """Every importable unit under `path` (a folder), and the result folders left out."""
    detection = Detection()
    _walk(path, 0, None, detection)
    detection.skipped = _uncovered(path, detection.sources)
    return detection


def _walk(path: Path, depth: int, skill_folder: Path | None, found: Detection) -> None:
    if (path / "conditions.json").is_file():
        label = path.name
        found.sources.append(
            Source("eval-magic", path, _eval_magic_folder_name(path), label, skill_folder)
        )
        return
    if path.name == "baseline" and path.parent.name == "evals" and (path / "grading").is_dir():
        owner = path.parent.parent
        folder = owner if is_skill_folder(owner) else skill_folder
        found.sources.append(Source("baseline", path, owner.resolve().name, "baseline", folder))
        return
    if is_skill_folder(path) and not is_snapshot(path.name):
        found.sources.append(Source("skill", path, path.resolve().name, "", path))
        baseline = path / "evals" / "baseline"
        if (baseline / "grading").is_dir():
            _walk(baseline, depth + 1, path, found)
        for child in _subdirs(path):
            if child.name.startswith("iteration-") or child.name.endswith("-workspace"):
                _walk(child, depth + 1, path, found)
            elif child.name in HIDDEN_SEARCHED:
                _walk(child, depth + 1, None, found)
        return
    if _is_skill_creator_iteration(path):
        folder_name = workspace_folder_name(path.resolve().parent)
        found.sources.append(Source("skill-creator", path, folder_name, path.name, skill_folder))
        return
    if depth >= MAX_DEPTH:
        return
    for child in _subdirs(path):
        if is_snapshot(child.name):
            continue
        owner = skill_folder
        if child.name.endswith("-workspace"):
            beside = path / workspace_folder_name(child)
            if beside.is_dir() and is_skill_folder(beside):
                owner = beside
        _walk(child, depth + 1, owner, found)


def _uncovered(root: Path, sources: list[Source]) -> list[tuple[Path, str]]:
    """Folders under `root` holding result files that no source covers, with the reason.

    The walk never enters a covered folder: the 18,000-run workspace has every file in one.
    Paths are compared as the walk built them, from `root`, without resolving links.
    """
    covered = {str(s.path) for s in sources if s.kind != "skill"}
    skill_folders = {s.path for s in sources if s.kind == "skill"}
    skipped: dict[Path, str] = {}
    for folder, dirnames, filenames in os.walk(root):
        if folder in covered:
            dirnames[:] = []
            continue
        dirnames[:] = [
            name
            for name in sorted(dirnames)
            # agent working folders and tool caches: never results
            if not (name in SKIPPED_DIRS or name.startswith(SKIPPED_DIR_PREFIXES))
        ]
        if RESULT_FILES.isdisjoint(filenames):
            continue
        here = Path(folder)
        skipped[here] = _reason(root, here, skill_folders)
        dirnames[:] = []  # one line per folder tree: its subfolders share the reason
    return sorted(skipped.items(), key=lambda item: natural_key(str(item[0])))


def _reason(root: Path, here: Path, skill_folders: set[Path]) -> str:
    parts = here.relative_to(root).parts
    if any(is_snapshot(part) for part in parts):
        return "inside a snapshot folder, which holds copies of old skills, not results"
    if any(part.startswith(".") and part not in HIDDEN_SEARCHED for part in parts):
        return "inside a hidden folder, which holds tool state, not results"
    if len(parts) > MAX_DEPTH:
        return f"more than {MAX_DEPTH} folders deep"
    if skill_folders.intersection(here.parents):
        return (
            "inside a skill folder but not in its iteration-*/, *-workspace/ or "
            "evals/baseline/ folders"
        )
    return (
        "not a layout evalsite reads (expected an eval-magic iteration with conditions.json, "
        "evals/baseline/grading/, or a skill-creator iteration of eval folders)"
    )
