"""skill-creator workspaces (SPEC §3.3): loose files, normalised as documented here.

Normalisations: expectations get the id `slugify(text)`; a missing `summary` is computed from
the expectations; 0 tokens with 0 time means "not recorded"; eval ids become strings; a lone
`benchmark.json` (no run folders beside it) is imported from its `runs[]`.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
from typing import Any

from runs.models import SourceKind
from runs.warnings import ValidityWarning

from . import jsonfiles
from .detect import NOT_CONFIGURATIONS, natural_key
from .errors import ImportFailure
from .eval_magic import eval_magic_grading, parse_timestamp
from .records import (
    EvalDefinition,
    ParsedCondition,
    ParsedIteration,
    ParsedReview,
    ParsedRun,
)
from .skill_creator_results import (
    eval_id_of,
    expectations_by_eval,
    rebuilt_definitions,
    runs_from_benchmark,
    skill_creator_grading,
)
from .tree import FileTree, cell_runs, is_skipped_dir

RUN_DIR = re.compile(r"^run-(\d+)$")
#: Template values skill-creator leaves where an agent did not fill a field in.
PLACEHOLDER = re.compile(r"^\s*<[^<>]*>\s*$")
RUN_FILES = ("grading.json", "timing.json")
#: Treatment first, like eval-magic's conditions_compared.
CONFIG_ORDER = ["with_skill", "new_skill", "without_skill", "old_skill"]
OUTPUT_PREVIEW_BYTES = 20_000


def read_iteration(
    tree: FileTree, *, skill_name: str, label: str, definitions: dict[str, EvalDefinition]
) -> ParsedIteration:
    """Parse a skill-creator iteration folder (or a folder holding only benchmark.json)."""
    benchmark = None
    if "benchmark.json" in tree.files:
        shown = tree.shown("benchmark.json")
        benchmark = tree.parsed.pop("benchmark.json", None)
        if benchmark is None:
            benchmark = jsonfiles.parse_json(tree.files["benchmark.json"], display=shown)
        jsonfiles.validate(benchmark, "skill-creator-benchmark", display=shown)
    metadata = (benchmark or {}).get("metadata") or {}
    timestamp = metadata.get("timestamp") or ""
    model = str(metadata.get("executor_model") or "")
    iteration = ParsedIteration.from_tree(
        tree,
        skill_name=skill_name,
        label=label,
        source_kind=SourceKind.SKILL_CREATOR,
        timestamp=timestamp,
        # "<model-name>" is the template's placeholder: the model was not recorded.
        agent_model="" if PLACEHOLDER.match(model) else model,
        harness="skill-creator",
        generated_at=parse_timestamp(
            timestamp, display=tree.shown("benchmark.json"), pointer="/metadata/timestamp"
        ),
        recorded_benchmark=benchmark,
    )
    if benchmark and isinstance(benchmark.get("notes"), list):
        iteration.extra["benchmark_notes"] = benchmark["notes"]

    eval_dirs = _eval_dirs(tree)
    metadata_by_dir = _eval_metadata(tree, eval_dirs)
    _check_unique_ids(tree, eval_dirs, metadata_by_dir)
    runs: list[ParsedRun] = []
    for cell in _run_folders(tree, eval_dirs, iteration.notices):
        runs.extend(_read_run(tree, *cell, metadata_by_dir))
    if not runs and benchmark and benchmark.get("runs"):
        runs = runs_from_benchmark(benchmark, display=tree.shown("benchmark.json"))
    elif benchmark and isinstance(benchmark.get("runs"), list):
        # The runs were read from their own folders; benchmark.json's copies of them (often
        # most of its bytes) are not kept twice, only their number.
        iteration.recorded_benchmark = {
            **{k: v for k, v in benchmark.items() if k != "runs"},
            "runs_not_kept": len(benchmark["runs"]),
        }
    if not runs:
        raise ImportFailure(
            "no eval-*/<configuration>/ run folders and no runs[] in benchmark.json",
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
    iteration.evals = rebuilt_definitions(runs, metadata_by_dir, definitions)
    if "feedback.json" in tree.files:
        feedback = jsonfiles.load(
            tree.files["feedback.json"],
            "skill-creator-feedback",
            display=tree.shown("feedback.json"),
        )
        iteration.extra["feedback_status"] = feedback.get("status")
        iteration.reviews = [
            ParsedReview(
                run_relpath_key=review["run_id"],
                text=review["feedback"],
                created_at=parse_timestamp(
                    review.get("timestamp"),
                    display=tree.shown("feedback.json"),
                    pointer=f"/reviews/{index}/timestamp",
                ),
            )
            for index, review in enumerate(feedback.get("reviews") or [])
            if review["feedback"].strip()
        ]
    return iteration


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


def _eval_metadata(tree: FileTree, eval_dirs: list[str]) -> dict[str, dict[str, Any]]:
    found = {}
    for eval_dir in eval_dirs:
        relpath = f"{eval_dir}/eval_metadata.json"
        if (raw := tree.files.get(relpath)) is not None:
            found[eval_dir] = jsonfiles.load(
                raw, "skill-creator-eval-metadata", display=tree.shown(relpath)
            )
    return found


def _check_unique_ids(
    tree: FileTree, eval_dirs: list[str], metadata_by_dir: dict[str, dict[str, Any]]
) -> None:
    seen: dict[str, str] = {}
    for eval_dir in eval_dirs:
        eval_id = eval_id_of(eval_dir, metadata_by_dir.get(eval_dir))
        if eval_id in seen:
            raise ImportFailure(
                f"eval id {eval_id!r} is also the id of {seen[eval_id]}/; "
                "expected one folder per eval",
                path=tree.shown(f"{eval_dir}/eval_metadata.json")
                if eval_dir in metadata_by_dir
                else tree.shown(eval_dir),
                pointer="/eval_id" if eval_dir in metadata_by_dir else None,
            )
        seen[eval_id] = eval_dir


def _run_folders(
    tree: FileTree, eval_dirs: list[str], notices: list[ValidityWarning]
) -> list[tuple[str, str, int, str]]:
    """(eval folder, configuration, run number, prefix) for flat and run-<k> layouts.

    Every configuration folder is a declared run slot, and so is every `run-<k>/` in it,
    even empty or holding only `outputs/`: such a run is a missing grading, as eval-magic
    counts it. Where a flat grading.json sits beside `run-<k>/` folders, the run folders win
    (as in eval-magic and skill-creator), and the flat file is named in a warning.
    """
    found = []
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
            slots = cell_runs(
                tree,
                cell,
                run_folders=runs,
                flat_files=flat,
                notices=notices,
                empty_cell_is_a_run=True,
            )
            if 0 in runs:
                notices.append(ValidityWarning("runs-from-zero", {"folder": tree.shown(cell)}))
            found.extend((eval_dir, config, index, prefix) for index, prefix in slots)
    return found


def _read_run(
    tree: FileTree,
    eval_dir: str,
    config: str,
    run_index: int,
    prefix: str,
    metadata_by_dir: dict[str, dict[str, Any]],
) -> list[ParsedRun]:
    """One run, or one per eval when a grading.json's expectations carry their own eval_id."""
    metadata = metadata_by_dir.get(eval_dir)
    run = ParsedRun(
        eval_id=eval_id_of(eval_dir, metadata),
        condition=config,
        run_index=run_index,
        source_relpath=prefix.rstrip("/"),
        content_hash=tree.digest(prefix),
        prompt=(metadata or {}).get("prompt") or "",
    )
    if prefix + "timing.json" in tree.files:
        timing = tree.json(prefix + "timing.json", "timing")
        tokens = timing.get("total_tokens")
        duration = timing.get("duration_ms")
        if not duration and timing.get("total_duration_seconds"):
            duration = timing["total_duration_seconds"] * 1000
        # skill-creator writes zeros for what it did not record: 0 tokens is never a
        # measurement (a run that ran used tokens), 0 ms with 0 tokens neither.
        tokens = tokens or None
        duration = duration if duration or tokens else None
        run.total_tokens = tokens
        run.duration_ms = round(duration) if duration is not None else None
        run.timing_source = "skill-creator" if tokens or duration else ""
    per_eval: dict[str, list[dict[str, Any]]] = {}
    if prefix + "grading.json" in tree.files:
        display = tree.shown(prefix + "grading.json")
        data = tree.json(prefix + "grading.json")
        if isinstance(data, dict) and "assertion_results" in data and "expectations" not in data:
            jsonfiles.validate(data, "grading", display=display)
            run.grading = eval_magic_grading(data)
        else:
            jsonfiles.validate(data, "skill-creator-grading", display=display)
            per_eval = expectations_by_eval(data["expectations"], default=run.eval_id)
            run.grading = skill_creator_grading(data)
    outputs = []
    for relpath in tree.under(prefix + "outputs/"):
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
