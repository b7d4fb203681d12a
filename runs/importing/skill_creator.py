"""skill-creator workspaces (SPEC §3.3): loose files, read as leniently as skill-creator does.

Each normalisation that changes what a file says is named in a validity warning: expectations
get the id `slugify(text)`, a missing `summary` is computed, 0 tokens with 0 time is "not
recorded", a `null` optional key is read as missing; a lone `benchmark.json` is imported from
its `runs[]`, but beside run folders the gradings win and it is only cross-checked; two eval
folders with one `eval_id` are one eval when their prompts agree, else the later one becomes
`<eval_id>@<folder>`; `<configuration>/eval-<id>-grading.json` is run 1 of eval `<id>`; a run
with `outputs/` and no grading.json is a missing grading.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
from dataclasses import dataclass
from typing import Any

from runs.models import SourceKind
from runs.warnings import ValidityWarning

from .detect import NOT_CONFIGURATIONS, natural_key
from .errors import ImportFailure
from .eval_magic import parse_timestamp
from .placement import TEMPLATE_VALUE
from .records import (
    EvalDefinition,
    ParsedCondition,
    ParsedIteration,
    ParsedRun,
)
from .skill_creator_results import (
    cells_only_in_benchmark,
    eval_ids,
    metadata_file,
    read_grading,
    read_timing,
    rebuilt_definitions,
    reviews,
    runs_from_benchmark,
    skill_creator_grading,
)
from .skill_creator_tolerance import Tolerated
from .tree import FileTree, is_skipped_dir, run_slots
from .walk import RUN_DIR

RUN_FILES = ("grading.json", "timing.json")
#: The author format: `<configuration>/[run-<k>/]eval-<id>-grading.json`.
AUTHOR_GRADING = re.compile(
    r"^(?P<config>[^/]+)/(?:run-(?P<run>\d+)/)?eval-(?P<eval>[^/]+?)-grading\.json$"
)
METADATA = "skill-creator-eval-metadata"
BENCHMARK = "skill-creator-benchmark"
#: Treatment first, like eval-magic's conditions_compared.
CONFIG_ORDER = ["with_skill", "new_skill", "without_skill", "old_skill"]
OUTPUT_PREVIEW_BYTES = 20_000


def read_iteration(
    tree: FileTree,
    *,
    skill_name: str,
    label: str,
    definitions: dict[str, EvalDefinition],
    keep_going: bool = False,
) -> ParsedIteration:
    """Parse a skill-creator iteration folder (or a folder holding only benchmark.json).

    With `keep_going`, a grading.json that cannot be read makes its run a missing grading
    (named in a warning) instead of rejecting the iteration.
    """
    tolerated = Tolerated(keep_going=keep_going)
    eval_dirs = _eval_dirs(tree)
    metadata_by_dir = {
        eval_dir: tolerated.load(tree, relpath, METADATA)
        for eval_dir in eval_dirs
        if (relpath := metadata_file(tree, eval_dir))
    }
    ids = eval_ids(eval_dirs, metadata_by_dir, tolerated.notices)
    numbering = _Numbering()
    cells = _run_folders(tree, eval_dirs, ids, numbering, tolerated.notices)
    cells += _author_gradings(tree, eval_dirs, numbering)
    benchmark, benchmark_valid = _benchmark(tree, tolerated, beside_runs=bool(cells))
    metadata = benchmark.get("metadata") if benchmark else None
    metadata = metadata if isinstance(metadata, dict) else {}
    timestamp = _string(metadata.get("timestamp"))
    model = _string(metadata.get("executor_model"))
    iteration = ParsedIteration.from_tree(
        tree,
        skill_name=skill_name,
        label=label,
        source_kind=SourceKind.SKILL_CREATOR,
        timestamp=timestamp,
        # "<model-name>" is the template's own text: the model was not recorded.
        agent_model="" if TEMPLATE_VALUE.match(model) else model,
        harness="skill-creator",
        generated_at=parse_timestamp(
            timestamp, display=tree.shown("benchmark.json"), pointer="/metadata/timestamp"
        ),
        recorded_benchmark=benchmark,
    )
    if benchmark and isinstance(benchmark.get("notes"), list):
        iteration.extra["benchmark_notes"] = benchmark["notes"]

    runs: list[ParsedRun] = []
    for slot in cells:
        runs.extend(_read_run(tree, slot, metadata_by_dir.get(slot.eval_dir), tolerated))
    if not runs and benchmark_valid and benchmark and benchmark.get("runs"):
        runs = runs_from_benchmark(benchmark, display=tree.shown("benchmark.json"))
    elif benchmark and isinstance(benchmark.get("runs"), list):
        if benchmark_valid:
            runs += cells_only_in_benchmark(runs, benchmark, tree, iteration.notices)
        # The runs were read from their own folders; benchmark.json's copies of them (often
        # most of its bytes) are not kept twice, only their number.
        iteration.recorded_benchmark = {
            **{k: v for k, v in benchmark.items() if k != "runs"},
            "runs_not_kept": len(benchmark["runs"]),
        }
    if not runs:
        raise ImportFailure(
            "no eval-*/<configuration>/ run folders, no <configuration>/eval-<id>-grading.json "
            "and no runs[] in benchmark.json",
            path=tree.display,
        )
    iteration.runs = runs

    configs = list(dict.fromkeys(run.condition for run in runs))
    ordered = [c for c in CONFIG_ORDER if c in configs] + sorted(set(configs) - set(CONFIG_ORDER))
    iteration.mode = "revision" if {"old_skill", "new_skill"} & set(configs) else "new-skill"
    iteration.conditions = [
        ParsedCondition(name=name, position=i, loads_skill=name != "without_skill")
        for i, name in enumerate(ordered)
    ]
    iteration.evals = rebuilt_definitions(runs, metadata_by_dir, definitions, ids=ids)
    if "feedback.json" in tree.files:
        feedback = tolerated.load(tree, "feedback.json", "skill-creator-feedback")
        iteration.extra["feedback_status"] = feedback.get("status")
        iteration.reviews = reviews(feedback, display=tree.shown("feedback.json"))
    iteration.notices.extend(tolerated.warnings())
    return iteration


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _benchmark(
    tree: FileTree, tolerated: Tolerated, *, beside_runs: bool
) -> tuple[dict[str, Any] | None, bool]:
    """benchmark.json and whether it is valid. Beside run folders it costs only itself: one
    that is not JSON is left out, one that is not a valid benchmark is kept to be
    cross-checked; each named in a warning. A lone one must be valid."""
    if "benchmark.json" not in tree.files:
        return None, False
    try:
        data = tree.json("benchmark.json")
    except ImportFailure as exc:
        if not beside_runs:
            raise
        tolerated.notices.append(ValidityWarning("benchmark-not-json", {"problem": exc.message}))
        return None, False
    try:
        return tolerated.validated(data, BENCHMARK, display=tree.shown("benchmark.json")), True
    except ImportFailure as exc:
        if not beside_runs:
            raise
        tolerated.notices.append(ValidityWarning("benchmark-not-read", {"problem": exc.message}))
        return (data if isinstance(data, dict) else None), False


def _eval_dirs(tree: FileTree) -> list[str]:
    """The iteration's eval folders (relative paths), whatever their names: `eval-*`, or a
    folder holding `eval_metadata.json` or `<configuration>/[run-<k>/]grading.json`; also
    inside the older `runs/` layer. skill-creator's instructions let agents name them."""
    found: set[str] = set()
    for relpath in tree.sizes:
        parts = relpath.split("/")
        if parts[0] == "runs" and len(parts) > 2:
            parts = parts[1:]
            base = "runs/"
        else:
            base = ""
        if len(parts) < 2 or RUN_DIR.match(parts[0]) or parts[0] in NOT_CONFIGURATIONS:
            continue
        name = parts[0]
        if (
            name.startswith("eval-")
            or parts[1] == "eval_metadata.json"
            or (len(parts) == 3 and parts[2] == "grading.json" and _is_config(parts[1]))
            or (
                len(parts) == 4
                and parts[3] == "grading.json"
                and _is_config(parts[1])
                and RUN_DIR.match(parts[2])
            )
        ):
            found.add(base + name)
    for extra in _dirs_on_disk(tree, "") + [f"runs/{d}" for d in _dirs_on_disk(tree, "runs")]:
        if extra.split("/")[-1].startswith("eval-"):
            found.add(extra)  # an eval folder whose runs hold nothing yet
    return sorted(found, key=natural_key)


def _is_config(name: str) -> bool:
    return not RUN_DIR.match(name) and name not in NOT_CONFIGURATIONS


def _dirs_on_disk(tree: FileTree, relative: str) -> list[str]:
    """Sub-folders of a folder of the tree, empty ones included (a declared run slot may be
    an empty folder: a missing grading, not nothing)."""
    folder = tree.root / relative if relative else tree.root
    try:
        with os.scandir(folder) as entries:
            return sorted(
                e.name
                for e in entries
                if e.is_dir(follow_symlinks=False) and not is_skipped_dir(e.name)
            )
    except OSError:
        return []


class _Numbering:
    """Run numbers taken per (eval id, configuration): where a folder's runs would take a
    number already taken (a second folder of one eval), they continue after the highest."""

    def __init__(self) -> None:
        self.taken: dict[tuple[str, str], set[int]] = {}

    def place(self, eval_id: str, config: str, indices: list[int]) -> list[int]:
        taken = self.taken.setdefault((eval_id, config), set())
        if taken & set(indices):
            shift = max(taken) - min(indices) + 1
            indices = [index + shift for index in indices]
        taken.update(indices)
        return indices


@dataclass(frozen=True)
class _RunSlot:
    """Where one run's files are: `prefix` + `grading`, the eval folder ("" in the author
    format) and the eval id and run number it is imported as."""

    eval_id: str
    eval_dir: str
    config: str
    run_index: int
    prefix: str
    grading: str = "grading.json"


def _run_folders(
    tree: FileTree,
    eval_dirs: list[str],
    ids: dict[str, str],
    numbering: _Numbering,
    notices: list[ValidityWarning],
) -> list[_RunSlot]:
    """The run slots of the eval folders, flat and run-<k> layouts.

    Every configuration folder is a declared run slot, and so is every `run-<k>/` in it,
    even empty or holding only `outputs/`: such a run is a missing grading, as eval-magic
    counts it. Where a flat grading.json sits beside `run-<k>/` folders, the run folders win
    (as in eval-magic and skill-creator), and the flat file is named in a warning.
    """
    found: list[_RunSlot] = []
    for eval_dir in eval_dirs:
        for config in _dirs_on_disk(tree, eval_dir):
            if not _is_config(config):
                continue
            cell = f"{eval_dir}/{config}"
            runs = {
                int(m.group(1)): f"{cell}/{name}/"
                for name in _dirs_on_disk(tree, cell)
                if (m := RUN_DIR.match(name))
            }
            flat = [name for name in RUN_FILES if f"{cell}/{name}" in tree.sizes]
            slots = run_slots(
                tree,
                cell,
                run_folders=runs,
                flat_files=flat,
                notices=notices,
                empty_cell_is_a_run=True,
            )
            if 0 in runs:
                notices.append(ValidityWarning("runs-from-zero", {"folder": tree.shown(cell)}))
            placed = numbering.place(ids[eval_dir], config, [index for index, _ in slots])
            found.extend(
                _RunSlot(ids[eval_dir], eval_dir, config, index, prefix)
                for index, (_, prefix) in zip(placed, slots, strict=True)
            )
    return found


def _author_gradings(tree: FileTree, eval_dirs: list[str], numbering: _Numbering) -> list[_RunSlot]:
    """Runs of the author format `<configuration>/[run-<k>/]eval-<id>-grading.json`."""
    by_cell: dict[tuple[str, str], list[tuple[int, str, str]]] = {}
    inside_evals = {eval_dir.split("/")[0] for eval_dir in eval_dirs}
    for relpath in tree.sizes:
        if not relpath.endswith("-grading.json"):
            continue
        match = AUTHOR_GRADING.match(relpath)
        if not match or not _is_config(config := match["config"]) or config in inside_evals:
            continue
        run_index = int(match["run"]) if match["run"] is not None else 1
        prefix, name = relpath.rsplit("/", 1)
        by_cell.setdefault((match["eval"], config), []).append((run_index, prefix + "/", name))
    found: list[_RunSlot] = []
    # Files are listed in the order the file system gave them: sort, for a stable run order.
    for (eval_id, config), slots in sorted(
        by_cell.items(), key=lambda c: (natural_key(c[0][0]), c[0][1])
    ):
        slots.sort()
        placed = numbering.place(eval_id, config, [index for index, _, _ in slots])
        found.extend(
            _RunSlot(eval_id, "", config, index, prefix, name)
            for index, (_, prefix, name) in zip(placed, slots, strict=True)
        )
    return found


def _read_run(
    tree: FileTree, slot: _RunSlot, metadata: dict[str, Any] | None, tolerated: Tolerated
) -> list[ParsedRun]:
    """One run, or one per eval when a grading.json's expectations carry their own eval_id."""
    prefix = slot.prefix
    run = ParsedRun(
        eval_id=slot.eval_id,
        condition=slot.config,
        run_index=slot.run_index,
        # The author format keeps several runs in one folder: the run is its grading file.
        source_relpath=prefix.rstrip("/") if slot.eval_dir else prefix + slot.grading,
        content_hash=tree.digest(prefix if slot.eval_dir else prefix + slot.grading),
        prompt=_string((metadata or {}).get("prompt")),
    )
    if slot.eval_dir and prefix + "timing.json" in tree.files:
        read_timing(run, tolerated.load(tree, prefix + "timing.json", "timing"))
    per_eval: dict[str, list[dict[str, Any]]] = {}
    grading_path = prefix + slot.grading
    if grading_path in tree.files:
        try:
            per_eval = read_grading(run, tree, grading_path, tolerated)
        except ImportFailure as exc:
            if not tolerated.keep_going:
                raise
            tolerated.unread_gradings.append(exc.message)
    outputs = []
    for relpath in tree.under(prefix + "outputs/") if slot.eval_dir else []:
        entry: dict[str, Any] = {
            "path": relpath[len(prefix) + len("outputs/") :],
            "size": tree.sizes[relpath],
        }
        raw = tree.files.get(relpath)
        if raw is not None and len(raw) <= OUTPUT_PREVIEW_BYTES:
            with contextlib.suppress(UnicodeDecodeError):
                entry["text"] = raw.decode("utf-8")
        outputs.append(entry)
    if outputs:
        run.artifacts["outputs"] = outputs
        if grading_path not in tree.sizes:
            tolerated.outputs_only.append(run.source_relpath)
    if len(per_eval) <= 1:
        return [run]
    # One grading.json graded several evals (each expectation names its eval): split it, or
    # 26 assertions of 5 evals would count as one run of one eval.
    split = []
    for eval_id, expectations in per_eval.items():
        part = copy.copy(run)
        part.eval_id = eval_id
        part.artifacts = dict(run.artifacts)
        part.grading = skill_creator_grading({"expectations": expectations})
        part.grading.extra = run.grading.extra if run.grading else {}
        if eval_id != run.eval_id:
            part.prompt = ""
        split.append(part)
    return split
