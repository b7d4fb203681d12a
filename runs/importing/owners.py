"""Which skill each iteration found by `detect.place` belongs to, and how it is labelled.

The owner of an iteration, first match wins (SPEC §3.6):
1. the skill its results name (each `eval_metadata.json`'s `skill`, each benchmark run's
   `skill`) when a skill folder of the import has that name (folder or SKILL.md `name`);
   results naming several skills split the iteration, one share per skill;
2. the nearest real skill folder around it (a workspace inside a skill folder is its own);
3. the nearest `<x>-workspace/` around it → the skill folder named `x` anywhere in the import;
4. the import's only skill folder;
5. the skill its results name, although no folder of the import has that name;
6. after evals.json's `skill_name` (read by the importer): a benchmark's
   `metadata.skill_name` (not the template's `<skill-name>`) from any iteration of the same
   workspace, then the folder name
   (`<x>-workspace` → `x`, past generic names such as `workspace/` or `evals/`).
A `SKILL.md` inside an iteration, an eval, a snapshot or a workspace (`*-workspace`, or a
stub whose `name` ends in `-workspace`) never makes a skill. Labels are the iteration
folders' names; where two iterations of one skill share a name, each is labelled by its path
from the folder they have in common (`batch1/iteration-1`, `batch2/iteration-1`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .naming import Names, skill_folders
from .placement import RESULT_FILES, TEMPLATE_VALUE, Placement, workspace_folder_name
from .walk import excluded, natural_key

#: Folder names that say what a folder holds, not whose it is.
GENERIC_NAMES = {
    "workspace", "eval-workspace", "evals", "eval", "results", "runs", "benchmarks",
    "iterations", "eval-results", ".eval-magic", "skill-evals",
}  # fmt: skip


@dataclass(frozen=True)
class Source:
    """One importable unit found under a path."""

    kind: str  # "skill", "eval-magic", "baseline", "skill-creator" or "triggers"
    path: Path
    #: The skill's name as the folders say it: the last resort of the identity rule.
    folder_name: str
    #: The iteration's label as its author wrote it ("iteration-4"); "" for skill folders.
    label: str = ""
    #: The skill folder whose SKILL.md and evals.json name this unit's skill and define
    #: its evals (the unit is inside it, its results name it, or `<x>-workspace` names it).
    skill_folder: Path | None = None
    #: The skill's name when no skill folder of the import is the owner but the results
    #: (or a benchmark's metadata) name it; None leaves it to evals.json and the folder.
    skill_name: str | None = None
    #: For one skill's share of a multi-skill iteration: its eval folders (relative to
    #: `path`) and the eval ids of benchmark-only runs. None: the whole iteration.
    eval_folders: frozenset[str] | None = None
    eval_ids: frozenset[str] = frozenset()
    #: Why the unit belongs to its skill, as the plan prints it.
    why: str = ""
    #: For a trigger file holding several skills' sets or results: the skill this unit reads.
    part: str | None = None


def attribute(
    root: Path, found: Placement
) -> tuple[list[Source], dict[Path, str], dict[Path, Any]]:
    """The import's units (skill folders, then iterations and baselines), what is left out,
    and the documents parsed on the way (by path), which the readers need not parse again."""
    skills = skill_folders(found)
    names = Names(found, skills)
    owner = _Owners(root, found, names)
    units: list[Source] = []
    ordered = sorted(found.iterations, key=lambda p: natural_key(str(p)))
    named = {path: names.named(path) for path in ordered}  # first: each may teach the others
    for path in ordered:
        units.extend(owner.iteration(path, *named[path]))
    for path in sorted(found.baselines, key=lambda p: natural_key(str(p))):
        units.append(owner.baseline(path))
    units = _labelled(units)
    # Sets first: results link to the set version holding their queries.
    by_kind = sorted(
        found.triggers, key=lambda p: (found.triggers[p][0] != "set", natural_key(str(p)))
    )
    # A set that names no skill is that of the results beside it, when they name one.
    beside: dict[Path, set[str]] = defaultdict(set)
    for path, (kind, data) in found.triggers.items():
        if kind != "set":
            beside[path.parent].update(trigger_names(data))
    for path in by_kind:
        kind, data = found.triggers[path]
        neighbours = beside[path.parent]
        hint = next(iter(neighbours)) if kind == "set" and len(neighbours) == 1 else None
        units.extend(owner.triggers(path, kind, data, hint))
    skill_units = [
        Source("skill", folder, folder.resolve().name, "", folder)
        for folder in sorted(skills, key=lambda p: natural_key(str(p)))
    ]
    return skill_units + units, _uncovered(found, units), names.documents


class _Owners:
    """Steps 2-6 of the owner rule, and the split by what the results name (`naming.py`)."""

    def __init__(self, root: Path, found: Placement, names: Names):
        self.root = root
        self.found = found
        self.names = names
        self._workspace_names: dict[Path, str | None] = {}

    def iteration(
        self, path: Path, by_folder: dict[str, str], by_id: dict[str, str]
    ) -> list[Source]:
        kind = self.found.iterations[path]
        by_folder = self.names.carried(path, by_folder) if kind == "skill-creator" else by_folder
        named = set(by_folder.values()) | set(by_id.values())
        around, why = self._around(path, kind)
        if len(named) > 1:
            # Evals no result names, among evals of several skills, are not "the only skill's".
            if why == "the import's only skill":
                around, why = None, ""
            return self._split(path, kind, by_folder, by_id, around, why)
        if named:
            (name,) = named
            folder = self.names.folder_named(name)
            if folder is not None:
                return [self._source(path, kind, folder, None, f"its results name {name!r}")]
            if around is not None:
                return [self._source(path, kind, around, None, why)]
            return [self._source(path, kind, None, name, f"its results name {name!r}")]
        return [self._source(path, kind, around, None, why)]

    def baseline(self, path: Path) -> Source:
        owner = path.parent.parent
        if owner in self.names.skills:
            folder, why = owner, "its skill folder"
        else:
            folder, why = self._around(path)
        return Source(
            "baseline", path, owner.resolve().name, "baseline", folder, None, None, frozenset(), why
        )

    def triggers(self, path: Path, kind: str, data: Any, beside: str | None) -> list[Source]:
        """One unit per skill a trigger file names (one, when it names none); a set naming
        none takes the skill the results `beside` it name."""
        named = trigger_names(data)
        units = []
        for name in named or [None]:
            folder = self.names.folder_named(name) if name else None
            why = f"its {kind} names {name!r}" if name else ""
            if folder is None:
                folder, why = self._around(path)
                why = why or (f"its {kind} names {name!r}" if name else "")
            if folder is None and name is None and beside is not None:
                name, why = beside, f"the results beside it name {beside!r}"
                folder = self.names.folder_named(beside)
            stem = TRIGGER_FILE_SKILL.match(path.stem)
            fallback = stem.group(1) if stem else self._fallback_name(path, "triggers")
            units.append(
                Source(
                    "triggers",
                    path,
                    fallback,
                    path.name,
                    folder,
                    None if folder else name,
                    why=why or "the folder's name",
                    part=name if len(named) > 1 else None,
                )
            )
        return units

    def _source(
        self,
        path: Path,
        kind: str,
        folder: Path | None,
        name: str | None,
        why: str,
        evals: frozenset[str] | None = None,
        ids: frozenset[str] = frozenset(),
    ) -> Source:
        # Only where nothing better names the skill: the fallback may parse a large benchmark.
        fallback = path.resolve().parent.name
        if folder is None and name is None:
            fallback = self._fallback_name(path, kind)
            why = why or "the folder's name"
        return Source(kind, path, fallback, path.name, folder, name, evals, ids, why)

    def _split(
        self,
        path: Path,
        kind: str,
        by_folder: dict[str, str],
        by_id: dict[str, str],
        around: Path | None,
        why: str,
    ) -> list[Source]:
        """One unit per skill the results name; evals naming none go to the iteration's owner."""
        every = {e.relative_to(path).as_posix() for e in self.names.evals_of[path]}
        shares: dict[str | None, tuple[set[str], set[str]]] = defaultdict(lambda: (set(), set()))
        for folder in every:
            shares[by_folder.get(folder)][0].add(folder)
        for eval_id, name in by_id.items():
            shares[name][1].add(eval_id)
        # Two names of one skill folder ("blog-post", "ropensci-blog-post") are one share,
        # and so are the evals no result names when the folder around is that skill's.
        owners: dict[object, tuple[Path | None, str | None, str, set[str], set[str]]] = {}
        for name, (folders, ids) in sorted(shares.items(), key=lambda kv: kv[0] or ""):
            folder = around if name is None else self.names.folder_named(name)
            reason = why if name is None else f"its results name {name!r}"
            key: object = folder or name
            entry = owners.setdefault(key, (folder, None if folder else name, reason, set(), set()))
            entry[3].update(folders)
            entry[4].update(ids)
        units = [
            self._source(path, kind, folder, name, reason, frozenset(folders), frozenset(ids))
            for folder, name, reason, folders, ids in owners.values()
        ]
        return units

    def _around(self, path: Path, kind: str = "skill-creator") -> tuple[Path | None, str]:
        """Steps 2-4: the skill folder around, `<x>-workspace` naming one, the only one."""
        for parent in path.parents:
            if parent in self.names.skills:
                return parent, "inside its skill folder"
            if parent == self.root or self.root not in parent.parents:
                break
        if kind == "eval-magic":
            # eval-magic's own convention: the folder holding its iterations names the skill.
            holder = path.parent.parent if path.parent.name == ".eval-magic" else path.parent
            if holder.name.casefold() not in GENERIC_NAMES:
                folder = self.names.folder_named(holder.name)
                return (
                    folder,
                    f"{holder.name}/ holds it, as eval-magic lays out a skill's iterations",
                )
        for parent in [path, *path.parents]:
            if parent.name.endswith("-workspace"):
                folder = self.names.folder_named(workspace_folder_name(parent))
                if folder is not None:
                    return folder, f"{parent.name}/ names it"
            if parent == self.root:
                break
        if len(self.names.skills) == 1:
            (only,) = self.names.skills
            return only, "the import's only skill"
        return None, ""

    def _fallback_name(self, path: Path, kind: str) -> str:
        """Step 6: a workspace-wide benchmark metadata.skill_name, else the folder's name."""
        workspace = path.parent
        if kind == "skill-creator":
            if workspace not in self._workspace_names:
                self._workspace_names[workspace] = self._metadata_name(workspace)
            if declared := self._workspace_names[workspace]:
                return declared
        if kind == "eval-magic":
            parent = path.resolve().parent
            return (parent.parent if parent.name == ".eval-magic" else parent).name
        parents = path.resolve().parents
        for folder in parents:
            if folder.name.endswith("-workspace") and workspace_folder_name(folder):
                return workspace_folder_name(folder)
        for folder in parents:
            name = workspace_folder_name(folder) if folder.name else ""
            if name and name.casefold() not in GENERIC_NAMES:
                return name
        return path.resolve().parent.name or path.name

    def _metadata_name(self, workspace: Path) -> str | None:
        for path in sorted(self.found.iterations, key=lambda p: natural_key(str(p))):
            if path.parent != workspace or self.found.iterations[path] != "skill-creator":
                continue
            if "benchmark.json" not in self.found.folders[path].files:
                continue
            data = self.names.benchmark(path)
            metadata = data.get("metadata") if isinstance(data, dict) else None
            name = metadata.get("skill_name") if isinstance(metadata, dict) else None
            if isinstance(name, str) and name.strip() and not TEMPLATE_VALUE.match(name):
                return name.strip()
        return None


#: `<skill>-trigger.json`, `<skill>_trigger_results.json`: the part before names a skill.
TRIGGER_FILE_SKILL = re.compile(r"^(.+?)[-_.](trigger|triggering|routing)", re.IGNORECASE)


def trigger_names(data: Any) -> list[str]:
    """The skills a trigger document names, in order (empty when it names none)."""
    if isinstance(data, dict):
        entries = data.get("skills") if isinstance(data.get("skills"), list) else [data]
    else:
        entries = [e for e in data if isinstance(e, dict) and "queries" in e] if data else []
    names: dict[str, None] = {}
    for entry in entries:
        if isinstance(entry, dict):
            name = entry.get("skill") or entry.get("skill_name")
            if isinstance(name, str) and name.strip() and not TEMPLATE_VALUE.match(name):
                names[name.strip()] = None
    return list(names)


def _labelled(units: list[Source]) -> list[Source]:
    """Each iteration's label: its folder's name, or its path from the folder shared with
    another iteration of the same skill that has the same name."""
    groups: dict[tuple[object, str], list[int]] = defaultdict(list)
    for index, unit in enumerate(units):
        if unit.kind == "baseline":
            continue
        owner = unit.skill_folder or unit.skill_name or unit.folder_name
        groups[(owner, unit.path.name)].append(index)
    labelled = list(units)
    for indexes in groups.values():
        paths = {units[i].path for i in indexes}
        if len(paths) < 2:
            continue
        common = Path(*_common_parts([p.parts for p in paths]))
        for i in indexes:
            unit = units[i]
            labelled[i] = replace(unit, label=unit.path.relative_to(common).as_posix())
    return labelled


def _common_parts(parts: list[tuple[str, ...]]) -> tuple[str, ...]:
    common: list[str] = []
    for column in zip(*parts, strict=False):
        if len(set(column)) != 1:
            break
        common.append(column[0])
    return tuple(common)


def _uncovered(found: Placement, units: list[Source]) -> dict[Path, str]:
    """Folders with result files that no unit covers and no earlier step named."""
    covered = {unit.path for unit in units}
    skipped: dict[Path, str] = {}
    named = set(found.skipped) | {p.parent for p in found.skipped if p.suffix == ".json"}
    for path, listing in found.folders.items():
        if RESULT_FILES.isdisjoint(listing.files) or excluded(listing):
            continue
        if path in covered or covered.intersection(path.parents):
            continue
        if path in named or named.intersection(path.parents):
            continue
        if any(parent in skipped for parent in path.parents):
            continue
        skipped[path] = (
            "results in no eval or iteration evalsite can place (expected "
            "<iteration>/<eval>/<configuration>/[run-<k>/]grading.json, eval_metadata.json, "
            "a skill-creator benchmark.json, conditions.json or evals/baseline/grading/)"
        )
    return skipped
