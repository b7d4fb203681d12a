"""Finding results from the files up (SPEC §3.6): nobody has to say which layout a folder is.

One walk lists every folder under the import. Each result file then places itself by what
surrounds it, never by where a layout rule expects it:

- a `grading.json` (or the `timing.json` of an ungraded run) in `run-<k>/` or directly in a
  configuration folder: its configuration, then its eval, then its iteration above that
  (past the older `runs/` layer);
- `<configuration>/eval-<id>-grading.json`: the configuration's parent is the iteration;
- `eval_metadata.json`: its folder is an eval, the one above an iteration;
- a skill-creator `benchmark.json`: its folder is an iteration;
- `conditions.json`: an eval-magic iteration; `evals/baseline/grading/`: a promoted baseline.

Folder names are only tie-breakers: a folder named `iteration-*` is never an eval, so a
grading directly in an eval folder is named as misplaced instead of turning the iteration
into an eval. A real skill folder holds `SKILL.md` (or `evals/evals.json`) outside any
result folder, snapshot or workspace; which skill each iteration belongs to is `owners.py`.
Every folder holding result files that no iteration covers is named with the reason, and so
is every result file in a format evalsite does not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from . import triggers
from .errors import ImportFailure
from .tree import ARTEFACT_DIR, read_head, read_result_file
from .walk import (
    MAX_DEPTH,
    RUN_DIR,
    Listing,
    entered,
    excluded,
    exclusion,
    holds_runs,
    outermost_excluded,
    settled,
)

#: Files that only a results folder holds: a folder with one of these is never skipped quietly.
RESULT_FILES = {"grading.json", "benchmark.json", "conditions.json", "eval_metadata.json"}
AUTHOR_GRADING = re.compile(r"^eval-(.+)-grading\.json$")
#: Folders inside an eval folder that are never configurations.
NOT_CONFIGURATIONS = {"outputs", "inputs", "files"}
#: Template values skill-creator leaves where an agent did not fill a field in ("<model>").
TEMPLATE_VALUE = re.compile(r"^\s*<[^<>]*>\s*$")
ITERATION_NAME = re.compile(r"^iteration", re.IGNORECASE)
#: Result files in formats evalsite does not read, and what they are.
UNREAD_FORMATS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^eval_summary\.json$"), "eval_summary.json verdicts"),
)
#: JSON files whose names say what they are: never a trigger set or result.
NOT_TRIGGER_FILES = RESULT_FILES | {
    *("timing.json", "run.json", "conversation.json", "evals.json", "feedback.json"),
    *("metrics.json", "package.json", "package-lock.json", "tsconfig.json"),
}
#: Folders whose files are an eval's inputs, not results about the skill.
FIXTURE_DIRS = NOT_CONFIGURATIONS | {"fixtures"}
#: Names that say a file is about triggering, so a shape evalsite cannot read is named.
TRIGGER_NAME = re.compile(r"trigger|routing|description[-_]?evals?|eval[-_]set", re.IGNORECASE)
#: Keys one of which a trigger document has within its first bytes.
TRIGGER_KEYS = (
    *(b'"query', b'"should_trigger"', b'"expected_trigger"', b'_description"'),
    *(b'"history"', b'"top"', b'"skills"', b'"predicted"'),
)
SNIFF_BYTES = 4096


@dataclass
class Placement:
    """What the result files say the folders are."""

    folders: dict[Path, Listing]
    #: Iteration folder → "eval-magic" or "skill-creator".
    iterations: dict[Path, str] = field(default_factory=dict)
    #: Eval folder → its iteration folder.
    evals: dict[Path, Path] = field(default_factory=dict)
    baselines: set[Path] = field(default_factory=set)
    #: Trigger set or results file → (triggers.SET or triggers.RESULTS, its document).
    triggers: dict[Path, tuple[str, Any]] = field(default_factory=dict)
    skipped: dict[Path, str] = field(default_factory=dict)


def workspace_folder_name(folder: Path) -> str:
    """A skill's name as a workspace folder gives it: `<x>-workspace` names `x`."""
    name = folder.name
    return name.removesuffix("-workspace") if name.endswith("-workspace") else name


def is_workspace_name(name: str) -> bool:
    """`workspace`, `eval-workspace`, `<x>-workspace`, `<x>-workspaces`: results, not a skill."""
    return name.casefold().rstrip("s").endswith("workspace")


def place(folders: dict[Path, Listing]) -> Placement:
    """Iterations, evals and baselines, as the result files in `folders` place them."""
    found = Placement(folders)
    weak: dict[Path, Path] = {}  # iteration candidates from run files alone, with evidence
    for path, listing in folders.items():
        if excluded(listing):
            if not RESULT_FILES.isdisjoint(listing.files):
                found.skipped.setdefault(outermost_excluded(path, listing), exclusion(listing))
            continue
        files = listing.files
        deep = len(listing.relative) >= MAX_DEPTH and not settled(listing)
        if deep and any(entered(d) for d in listing.dirs):
            found.skipped[path] = f"more than {MAX_DEPTH} folders deep; not searched"
        if "conditions.json" in files:
            found.iterations[path] = "eval-magic"
        if _is_baseline_grading(path, listing):
            found.baselines.add(path.parent)
        if "benchmark.json" in files and "conditions.json" not in files:
            if _is_baseline_folder(path, folders):
                pass
            elif _is_eval_magic_benchmark(path / "benchmark.json"):
                found.skipped[path / "benchmark.json"] = (
                    "an eval-magic benchmark.json without the conditions.json beside it "
                    "(expected an eval-magic iteration); not read"
                )
            else:
                found.iterations.setdefault(path, "skill-creator")
        if "eval_metadata.json" in files:
            # Beside run files or run-<k>/ folders, the metadata sits in a configuration (or
            # run) folder, and the eval is the folder above.
            if holds_runs(listing):
                eval_folder = path.parent.parent if RUN_DIR.match(path.name) else path.parent
                weak.setdefault(path, path.parent if RUN_DIR.match(path.name) else path)
                found.evals.setdefault(eval_folder, _iteration_of(eval_folder))
                continue
            iteration = _iteration_of(path)
            if iteration in folders:
                found.evals[path] = iteration
                found.iterations.setdefault(iteration, "skill-creator")
            else:
                found.skipped[path] = (
                    f"the results of one eval ({path.name}); import the iteration folder "
                    "that holds it"
                )
        for name in sorted(files):
            for pattern, what in UNREAD_FORMATS:
                if pattern.match(name):
                    found.skipped[path / name] = f"unrecognised result format ({what})"
        if not holds_runs(listing) and FIXTURE_DIRS.isdisjoint(listing.relative):
            _place_triggers(found, path, files, listing.relative)
        if (
            "grading.json" in files
            or "timing.json" in files
            or "run.json" in files
            or ARTEFACT_DIR in listing.dirs  # a run that left outputs and no grading
        ):
            config = path.parent if RUN_DIR.match(path.name) else path
            weak.setdefault(path, config)
        if any(AUTHOR_GRADING.match(name) for name in files):
            config = path.parent if RUN_DIR.match(path.name) else path
            if config.parent in folders:
                found.iterations.setdefault(config.parent, "skill-creator")
    for run, config in weak.items():
        _place_run(found, run, config)
    _drop_nested(found)
    _drop_unread_benchmarks(found)
    return found


def _place_triggers(
    found: Placement, folder: Path, files: frozenset[str], relative: tuple[str, ...]
) -> None:
    """Trigger sets and results in `folder`, known by their keys whatever their names."""
    in_trigger_folder = any(TRIGGER_NAME.search(part) for part in relative)
    for name in sorted(files):
        if not name.endswith(".json") or name in NOT_TRIGGER_FILES or AUTHOR_GRADING.match(name):
            continue
        path = folder / name
        named = in_trigger_folder or bool(TRIGGER_NAME.search(name))
        try:
            head = read_head(path, SNIFF_BYTES)
            if not named and not any(key in head for key in TRIGGER_KEYS):
                continue
            data = orjson.loads(read_result_file(path, display=str(path)))
        except (ImportFailure, orjson.JSONDecodeError) as exc:
            if named:
                problem = exc.message if isinstance(exc, ImportFailure) else "not valid JSON"
                found.skipped[path] = f"a trigger-eval file that cannot be read ({problem})"
            continue
        kind = triggers.sniff(data)
        if kind in (triggers.SET, triggers.RESULTS):
            found.triggers[path] = (kind, data)
        elif kind is not None:
            found.skipped[path] = f"unrecognised result format ({kind})"
        elif named:
            found.skipped[path] = (
                "unrecognised result format (its name says trigger evals, but it holds neither "
                "a set of {query, should_trigger} nor results evalsite reads)"
            )


def _drop_unread_benchmarks(found: Placement) -> None:
    """A benchmark.json with no runs folders beside it is an iteration only when it lists
    runs[] as skill-creator's does; an author's own summary format is named, not rejected."""
    with_evals = set(found.evals.values())
    for path, kind in list(found.iterations.items()):
        if kind != "skill-creator" or path in with_evals:
            continue
        listing = found.folders[path]
        if "benchmark.json" not in listing.files or any(
            AUTHOR_GRADING.match(name) for d in listing.dirs for name in _files(found, path / d)
        ):
            continue
        file = path / "benchmark.json"
        try:
            data = orjson.loads(read_result_file(file, display=str(file)))
        except (ImportFailure, orjson.JSONDecodeError):
            continue  # the reader names a benchmark.json it cannot read
        if isinstance(data, dict) and isinstance(data.get("runs"), list):
            continue
        keys = ", ".join(sorted(data)[:6]) if isinstance(data, dict) else type(data).__name__
        found.skipped[path / "benchmark.json"] = (
            f"unrecognised result format (a benchmark.json without skill-creator's runs[]; "
            f"it holds {keys}), and no gradings beside it"
        )
        del found.iterations[path]


def _files(found: Placement, path: Path) -> frozenset[str]:
    listing = found.folders.get(path)
    return listing.files if listing is not None else frozenset()


def _place_run(found: Placement, run: Path, config: Path) -> None:
    """A run folder places its configuration, eval and iteration, unless that contradicts
    what stronger evidence (or a folder's name) says the folders are.

    Where nothing but the shape `<x>/<y>/grading.json` says so (no `run-<k>/`, no
    `eval_metadata.json`, no `eval-*` or `iteration*` name, no benchmark or conditions.json),
    the file must look like a grading: `notes/scratch/grading.json` may be anything.
    """
    eval_folder = config.parent
    if run in found.iterations or run in found.baselines or run.name == "grading":
        return  # an iteration's own timing.json or a baseline's gradings, not a run
    listing = found.folders[run]
    name = "grading.json" if "grading.json" in listing.files else ""
    if config.name in NOT_CONFIGURATIONS or config in found.iterations or config in found.evals:
        if name:
            found.skipped.setdefault(
                run, "a grading.json outside any <eval>/<configuration>/ folder; not read"
            )
        return
    inside = eval_folder in found.iterations or ITERATION_NAME.match(eval_folder.name)
    if inside and eval_folder not in found.evals:
        if name:
            found.skipped.setdefault(
                run,
                "a grading.json in a folder directly inside an iteration (expected "
                "<eval>/<configuration>/[run-<k>/]grading.json); not read",
            )
        return
    holder = found.folders.get(eval_folder.parent)
    if eval_folder.name == "evals" and holder is not None and "SKILL.md" in holder.files:
        if name:
            found.skipped.setdefault(
                run,
                "inside a skill's evals/ folder but in no iteration (expected "
                "<iteration>/<eval>/<configuration>/[run-<k>/]grading.json); not read",
            )
        return
    iteration = found.evals.get(eval_folder) or _iteration_of(eval_folder)
    placed_by_name = (
        RUN_DIR.match(run.name)
        or eval_folder in found.evals
        or eval_folder.name.startswith("eval-")
        or iteration in found.iterations
        or ITERATION_NAME.match(iteration.name)
    )
    if not placed_by_name and not (name and _looks_like_grading(run / name)):
        if name:
            found.skipped.setdefault(
                run,
                "a grading.json that is not a grading (no expectations or "
                "assertion_results) in no eval or iteration evalsite can place; not read",
            )
        return
    if iteration not in found.folders:
        found.skipped.setdefault(
            run,
            f"the results of one eval ({eval_folder.name}); import the iteration folder "
            "that holds it",
        )
        return
    found.evals.setdefault(eval_folder, iteration)
    found.iterations.setdefault(iteration, "skill-creator")


def _looks_like_grading(path: Path) -> bool:
    try:
        head = read_head(path, 1 << 16)
    except ImportFailure:
        return False
    return b'"expectations"' in head or b'"assertion_results"' in head


def _drop_nested(found: Placement) -> None:
    """An iteration inside another: an eval-magic iteration (conditions.json) keeps what is
    under it; otherwise the inner folders are the iterations and the outer one's own files
    are named. Compared by relative parts, not Path objects: a workspace has thousands."""
    relative = {path: found.folders[path].relative for path in found.iterations}
    eval_magic = {relative[p] for p, kind in found.iterations.items() if kind == "eval-magic"}
    kept = {
        path: kind
        for path, kind in found.iterations.items()
        if not any(relative[path][:i] in eval_magic for i in range(len(relative[path])))
    }
    inner: dict[tuple[str, ...], list[Path]] = {}
    for path in kept:
        parts = relative[path]
        for i in range(len(parts)):
            inner.setdefault(parts[:i], []).append(path)
    for path in list(kept):
        below = inner.get(relative[path])
        if below and kept[path] != "eval-magic":
            del kept[path]
            found.skipped.setdefault(
                path / "benchmark.json" if "benchmark.json" in found.folders[path].files else path,
                "results above other iterations ("
                + ", ".join(p.name for p in below[:3])
                + (", …" if len(below) > 3 else "")
                + "); not read",
            )
    found.iterations = kept
    found.evals = {e: i for e, i in found.evals.items() if i in kept}


def _is_eval_magic_benchmark(path: Path) -> bool:
    """eval-magic's benchmark names its two conditions; skill-creator's has runs[]/metadata."""
    try:
        return b'"conditions_compared"' in read_head(path, 1 << 20)
    except ImportFailure:
        return False


def _iteration_of(eval_folder: Path) -> Path:
    parent = eval_folder.parent
    return parent.parent if parent.name == "runs" else parent


def _is_baseline_grading(path: Path, listing: Listing) -> bool:
    return (
        path.name == "grading"
        and path.parent.name == "baseline"
        and path.parent.parent.name == "evals"
        and any(name.endswith(".json") for name in listing.files)
    )


def _is_baseline_folder(path: Path, folders: dict[Path, Listing]) -> bool:
    grading = folders.get(path / "grading")
    return grading is not None and _is_baseline_grading(path / "grading", grading)
