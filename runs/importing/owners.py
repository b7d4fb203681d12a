"""Which skill each iteration found by `detect.place` belongs to, and how it is labelled.

The owner of an iteration, first match wins (SPEC §3.6):
1. the skill its results name (each `eval_metadata.json`'s `skill`, each benchmark run's
   `skill`) when a skill folder of the import has that name (folder or SKILL.md `name`);
   results naming several skills split the iteration, one share per skill;
2. the nearest real skill folder around it (a workspace inside a skill folder is its own);
3. the nearest `<x>-workspace/` around it → the skill folder named `x` anywhere in the import;
4. the import's only skill folder;
5. the skill its results name, although no folder of the import has that name;
6. after evals.json's `skill_name` (read by the importer): a benchmark's non-placeholder
   `metadata.skill_name` from any iteration of the same workspace, then the folder name
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
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from .errors import ImportFailure
from .frontmatter import parse_front_matter
from .placement import (
    PLACEHOLDER,
    RESULT_FILES,
    Listing,
    Placement,
    excluded,
    is_workspace_name,
    natural_key,
    workspace_folder_name,
)
from .tree import read_result_file

SKILL_KEY = re.compile(rb'"skill"\s*:')
#: Folder names that say what a folder holds, not whose it is.
GENERIC_NAMES = {
    "workspace", "eval-workspace", "evals", "eval", "results", "runs", "benchmarks",
    "iterations", "eval-results", ".eval-magic", "skill-evals",
}  # fmt: skip


@dataclass(frozen=True)
class Source:
    """One importable unit found under a path."""

    kind: str  # "skill", "eval-magic", "baseline" or "skill-creator"
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


def attribute(
    root: Path, found: Placement
) -> tuple[list[Source], dict[Path, str], dict[Path, Any]]:
    """The import's units (skill folders, then iterations and baselines), what is left out,
    and the documents parsed on the way (by path), which the readers need not parse again."""
    skills = _skill_folders(found)
    names = _names(skills, found)
    by_name: dict[str, list[Path]] = defaultdict(list)
    for folder, known in names.items():
        for name in known:
            by_name[name].append(folder)
    owner = _Owners(root, found, skills, by_name, {f: _preferred(f, n) for f, n in names.items()})
    units: list[Source] = []
    ordered = sorted(found.iterations, key=lambda p: natural_key(str(p)))
    named = {path: owner.named(path) for path in ordered}  # first: each may teach the others
    for path in ordered:
        units.extend(owner.iteration(path, *named[path]))
    for path in sorted(found.baselines, key=lambda p: natural_key(str(p))):
        units.append(owner.baseline(path))
    units = _labelled(units)
    skill_units = [
        Source("skill", folder, folder.resolve().name, "", folder)
        for folder in sorted(skills, key=lambda p: natural_key(str(p)))
    ]
    return skill_units + units, _uncovered(found, units), owner.documents


def _skill_folders(found: Placement) -> list[Path]:
    results = set(found.iterations) | set(found.evals) | found.baselines
    skills = []
    for path, listing in found.folders.items():
        if not _holds_definitions(path, listing, found) or excluded(listing):
            continue
        if path in results or results.intersection(path.parents):
            continue  # a snapshot or stub SKILL.md inside results
        if is_workspace_name(path.name) or is_workspace_name(_front_matter_name(path) or ""):
            continue  # a workspace's generated stub
        skills.append(path)
    return skills


def _holds_definitions(path: Path, listing: Listing, found: Placement) -> bool:
    if "SKILL.md" in listing.files:
        return True
    evals = found.folders.get(path / "evals")
    return evals is not None and "evals.json" in evals.files


def _front_matter_name(folder: Path) -> str | None:
    skill_md = folder / "SKILL.md"
    try:
        text = read_result_file(skill_md, display=str(skill_md)).decode("utf-8", "replace")
        return parse_front_matter(text, display=str(skill_md)).name
    except (ImportFailure, OSError):
        return None  # the skill folder's own import names what is wrong with it


def _names(skills: list[Path], found: Placement) -> dict[Path, set[str]]:
    names: dict[Path, set[str]] = {}
    for folder in skills:
        known = {folder.name, folder.resolve().name}
        if "SKILL.md" in found.folders[folder].files and (name := _front_matter_name(folder)):
            known.add(name.strip())
        names[folder] = known
    return names


def _preferred(folder: Path, names: set[str]) -> str:
    """The name a skill folder goes by: its SKILL.md `name`, else its folder's."""
    others = names - {folder.name, folder.resolve().name}
    return sorted(others)[0] if others else folder.resolve().name


def _qualifies(name: str, short: str) -> bool:
    """Whether `name` is `short` with a namespace in front: `plugin:short`, `org-short`."""
    return name != short and name.endswith((f":{short}", f"-{short}", f"/{short}"))


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _json(path: Path, *, unless_lacking: re.Pattern[bytes] | None = None) -> Any:
    """A small JSON file, parsed; None when unreadable, or when it lacks `unless_lacking`."""
    try:
        raw = read_result_file(path, display=str(path))
        if unless_lacking is not None and not unless_lacking.search(raw):
            return None
        return orjson.loads(raw)
    except (ImportFailure, orjson.JSONDecodeError, OSError):
        return None  # the iteration's reader names a file it cannot read


class _Owners:
    def __init__(
        self,
        root: Path,
        found: Placement,
        skills: list[Path],
        by_name: dict[str, list[Path]],
        skill_names: dict[Path, str],
    ):
        self.root = root
        self.found = found
        self.skills = set(skills)
        self.by_name = by_name
        self.evals_of: dict[Path, list[Path]] = defaultdict(list)
        for eval_folder, iteration in found.evals.items():
            self.evals_of[iteration].append(eval_folder)
        self._workspace_names: dict[Path, str | None] = {}
        #: (workspace, eval folder name) → the skill an iteration's results named for it.
        self._learned: dict[tuple[Path, str], str] = {}
        self._prompts: dict[str, set[Path]] | None = None
        #: Documents parsed on the way (benchmark.json by path), for the readers.
        self.documents: dict[Path, Any] = {}
        self._raw: dict[Path, bytes] = {}
        #: The name each skill folder is matched by in _folder_named (its SKILL.md name).
        self.skill_names = skill_names

    def named(self, path: Path) -> tuple[dict[str, str], dict[str, str]]:
        if self.found.iterations[path] != "skill-creator":
            return {}, {}
        return self._named(path)

    def iteration(
        self, path: Path, by_folder: dict[str, str], by_id: dict[str, str]
    ) -> list[Source]:
        kind = self.found.iterations[path]
        by_folder = self._carried(path, by_folder) if kind == "skill-creator" else by_folder
        named = set(by_folder.values()) | set(by_id.values())
        around, why = self._around(path, kind)
        if len(named) > 1:
            # Evals no result names, among evals of several skills, are not "the only skill's".
            if why == "the import's only skill":
                around, why = None, ""
            return self._split(path, kind, by_folder, by_id, around, why)
        if named:
            (name,) = named
            folder = self._folder_named(name)
            if folder is not None:
                return [self._source(path, kind, folder, None, f"its results name {name!r}")]
            if around is not None:
                return [self._source(path, kind, around, None, why)]
            return [self._source(path, kind, None, name, f"its results name {name!r}")]
        return [self._source(path, kind, around, None, why)]

    def baseline(self, path: Path) -> Source:
        owner = path.parent.parent
        if owner in self.skills:
            folder, why = owner, "its skill folder"
        else:
            folder, why = self._around(path)
        return Source(
            "baseline", path, owner.resolve().name, "baseline", folder, None, None, frozenset(), why
        )

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
        every = {e.relative_to(path).as_posix() for e in self.evals_of[path]}
        shares: dict[str | None, tuple[set[str], set[str]]] = defaultdict(lambda: (set(), set()))
        for folder in every:
            shares[by_folder.get(folder)][0].add(folder)
        for eval_id, name in by_id.items():
            shares[name][1].add(eval_id)
        # Two names of one skill folder ("blog-post", "ropensci-blog-post") are one share,
        # and so are the evals no result names when the folder around is that skill's.
        owners: dict[object, tuple[Path | None, str | None, str, set[str], set[str]]] = {}
        for name, (folders, ids) in sorted(shares.items(), key=lambda kv: kv[0] or ""):
            folder = around if name is None else self._folder_named(name)
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

    def _named(self, path: Path) -> tuple[dict[str, str], dict[str, str]]:
        """The skill each eval folder belongs to by what its results say, and the skill of
        each benchmark-only run (by eval id).

        An eval folder's skill is its eval_metadata.json's `skill`, else its benchmark run's
        `skill`, else (with several skill folders in the import) the skill whose evals.json
        holds its prompt, else what the same-named eval folder of another iteration of the
        workspace belongs to.
        """
        # Benchmark runs: (eval id, eval name) → the skill they name.
        listed: dict[tuple[str, str], str] = {}
        if "benchmark.json" in self.found.folders[path].files:
            data = self.benchmark(path, only_naming_skills=True)
            runs = data.get("runs") if isinstance(data, dict) else None
            for run in runs if isinstance(runs, list) else []:
                skill = run.get("skill") if isinstance(run, dict) else None
                if isinstance(skill, str) and skill.strip() and run.get("eval_id") is not None:
                    name = run.get("eval_name")
                    key = (str(run["eval_id"]), name if isinstance(name, str) else "")
                    listed[key] = skill.strip()
        by_folder: dict[str, str] = {}
        declared: set[str] = set()
        for eval_folder in self.evals_of[path]:
            relative = eval_folder.relative_to(path).as_posix()
            metadata = None
            if "eval_metadata.json" in self.found.folders[eval_folder].files:
                # Its eval id and prompt matter only to match benchmark runs or evals.json.
                lacking = None if listed or len(self.skills) > 1 else SKILL_KEY
                metadata = _json(eval_folder / "eval_metadata.json", unless_lacking=lacking)
            metadata = metadata if isinstance(metadata, dict) else {}
            eval_id = metadata.get("eval_id")
            eval_id = (
                str(eval_id) if eval_id is not None else eval_folder.name.removeprefix("eval-")
            )
            # A benchmark run is this folder's by id, or by name (folders are often named so).
            mine = [k for k in listed if k[0] == eval_id or k[1] == eval_folder.name]
            from_benchmark = listed[mine[0]] if mine else None
            for key in mine:
                del listed[key]
            skill = metadata.get("skill")
            if isinstance(skill, str) and skill.strip():
                declared.add(skill.strip())
            else:
                skill = from_benchmark or self._by_prompt(metadata.get("prompt"))
            if skill:
                by_folder[relative] = skill.strip()
        by_id = {eval_id: skill for (eval_id, _), skill in listed.items()}
        # A benchmark may qualify the names eval_metadata.json gives ("ropensci-blog-post"
        # for "blog-post"): where no skill folder has its name, it is the declared one.
        by_folder = {k: self._declared(v, declared) for k, v in by_folder.items()}
        by_id = {k: self._declared(v, declared) for k, v in by_id.items()}
        for relative, skill in by_folder.items():
            self._learned[(path.parent, PurePosixPath(relative).name)] = skill
        return by_folder, by_id

    def _declared(self, name: str, declared: set[str]) -> str:
        if name in declared or self._folder_named(name) is not None:
            return name
        shorter = [d for d in declared if _qualifies(name, d)]
        return shorter[0] if len(shorter) == 1 else name

    def _carried(self, path: Path, by_folder: dict[str, str]) -> dict[str, str]:
        """Eval folders no result names, named as the same folder of a sibling iteration."""
        for eval_folder in self.evals_of[path]:
            relative = eval_folder.relative_to(path).as_posix()
            if relative not in by_folder and (
                skill := self._learned.get((path.parent, eval_folder.name))
            ):
                by_folder[relative] = skill
        return by_folder

    def _by_prompt(self, prompt: object) -> str | None:
        """The skill whose evals.json holds this prompt, when it is the only one that does."""
        if len(self.skills) < 2 or not isinstance(prompt, str) or not prompt.strip():
            return None
        if self._prompts is None:
            self._prompts = defaultdict(set)
            for folder in self.skills:
                data = _json(folder / "evals" / "evals.json")
                cases = data.get("evals") if isinstance(data, dict) else data
                for case in cases if isinstance(cases, list) else []:
                    text = case.get("prompt") if isinstance(case, dict) else None
                    if isinstance(text, str) and text.strip():
                        self._prompts[_norm(text)].add(folder)
        folders = self._prompts.get(_norm(prompt)) or set()
        if len(folders) != 1:
            return None
        (folder,) = folders
        return self.skill_names[folder]

    def benchmark(self, path: Path, *, only_naming_skills: bool = False) -> Any:
        """The iteration's parsed benchmark.json, kept for its reader (a 6,000-run benchmark
        takes 0.1 s to parse); None when unreadable, or when `only_naming_skills` and it
        names no skill."""
        file = path / "benchmark.json"
        if file in self.documents:
            return self.documents[file]
        raw = self._raw.get(file)
        if raw is None:
            try:
                raw = self._raw[file] = read_result_file(file, display=str(file))
            except (ImportFailure, OSError):
                return None
        if only_naming_skills and not SKILL_KEY.search(raw):
            return None
        del self._raw[file]
        try:
            self.documents[file] = data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        return data

    def _around(self, path: Path, kind: str = "skill-creator") -> tuple[Path | None, str]:
        """Steps 2-4: the skill folder around, `<x>-workspace` naming one, the only one."""
        for parent in path.parents:
            if parent in self.skills:
                return parent, "inside its skill folder"
            if parent == self.root or self.root not in parent.parents:
                break
        if kind == "eval-magic":
            # eval-magic's own convention: the folder holding its iterations names the skill.
            holder = path.parent.parent if path.parent.name == ".eval-magic" else path.parent
            if holder.name.casefold() not in GENERIC_NAMES:
                folder = self._folder_named(holder.name)
                return (
                    folder,
                    f"{holder.name}/ holds it, as eval-magic lays out a skill's iterations",
                )
        for parent in [path, *path.parents]:
            if parent.name.endswith("-workspace"):
                folder = self._folder_named(workspace_folder_name(parent))
                if folder is not None:
                    return folder, f"{parent.name}/ names it"
            if parent == self.root:
                break
        if len(self.skills) == 1:
            (only,) = self.skills
            return only, "the import's only skill"
        return None, ""

    def _folder_named(self, name: str) -> Path | None:
        """The skill folder of this name, or the only one a qualified name ends with
        (`plugin:skill`, `org-skill`)."""
        folders = self.by_name.get(name) or []
        if not folders:
            folders = list(
                {f for known, fs in self.by_name.items() if _qualifies(name, known) for f in fs}
            )
        return folders[0] if len(folders) == 1 else None

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
            data = self.benchmark(path)
            metadata = data.get("metadata") if isinstance(data, dict) else None
            name = metadata.get("skill_name") if isinstance(metadata, dict) else None
            if isinstance(name, str) and name.strip() and not PLACEHOLDER.match(name):
                return name.strip()
        return None


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
