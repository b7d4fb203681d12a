"""What an iteration's results say about whose they are (step 1 of the owner rule in
`owners.py`), and the import's skill folders they are matched against.

An eval folder's skill is its eval_metadata.json's `skill`, else its benchmark run's (by eval
id or eval name), else (with several skill folders) the skill whose evals.json holds its
prompt, else what the same eval folder of another iteration of the workspace belongs to. A
namespaced name (`ropensci-blog-post`, `plugin:blog-post`) names the folder, or the
eval_metadata name, it qualifies.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from .errors import ImportFailure
from .frontmatter import parse_front_matter
from .placement import Placement, is_workspace_name
from .tree import read_result_file
from .walk import Listing, excluded

SKILL_KEY = re.compile(rb'"skill"\s*:')


def skill_folders(found: Placement) -> list[Path]:
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


class Names:
    """The import's skill folders by name, and the skills each iteration's results name."""

    def __init__(self, found: Placement, skills: list[Path]):
        self.found = found
        self.skills = set(skills)
        names = _names(skills, found)
        self.by_name: dict[str, list[Path]] = defaultdict(list)
        for folder, known in names.items():
            for name in known:
                self.by_name[name].append(folder)
        #: The name each skill folder goes by (its SKILL.md `name`).
        self.skill_names = {f: _preferred(f, n) for f, n in names.items()}
        self.evals_of: dict[Path, list[Path]] = defaultdict(list)
        for eval_folder, iteration in found.evals.items():
            self.evals_of[iteration].append(eval_folder)
        #: (workspace, eval folder name) → the skill an iteration's results named for it.
        self._learned: dict[tuple[Path, str], str] = {}
        self._prompts: dict[str, set[Path]] | None = None
        #: Documents parsed on the way (benchmark.json by path), for the readers.
        self.documents: dict[Path, Any] = {}
        self._raw: dict[Path, bytes] = {}

    def named(self, path: Path) -> tuple[dict[str, str], dict[str, str]]:
        if self.found.iterations[path] != "skill-creator":
            return {}, {}
        return self._named(path)

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
        if name in declared or self.folder_named(name) is not None:
            return name
        shorter = [d for d in declared if _qualifies(name, d)]
        return shorter[0] if len(shorter) == 1 else name

    def carried(self, path: Path, by_folder: dict[str, str]) -> dict[str, str]:
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

    def folder_named(self, name: str) -> Path | None:
        """The skill folder of this name, or the only one a qualified name ends with
        (`plugin:skill`, `org-skill`)."""
        folders = self.by_name.get(name) or []
        if not folders:
            folders = list(
                {f for known, fs in self.by_name.items() if _qualifies(name, known) for f in fs}
            )
        return folders[0] if len(folders) == 1 else None
