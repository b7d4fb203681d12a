"""One skill's share of an iteration whose results name several skills (a plugin's one
workspace for its many skills): its runs, the evals they ran and their reviews."""

from __future__ import annotations

from runs.warnings import ValidityWarning

from .records import ParsedIteration, ParsedRun

BENCHMARK_RUN = "benchmark.json#"


def eval_folder_of(run: ParsedRun) -> str:
    """The eval folder (relative to the iteration) a run was read from; "" for benchmark runs."""
    if run.source_relpath.startswith(BENCHMARK_RUN):
        return ""
    parts = run.source_relpath.split("/")
    return "/".join(parts[:2]) if parts[0] == "runs" and len(parts) > 2 else parts[0]


def share_of(
    parsed: ParsedIteration, eval_folders: frozenset[str], eval_ids: frozenset[str]
) -> ParsedIteration:
    """`parsed` cut down to the runs of `eval_folders` (and benchmark-only runs of `eval_ids`).

    The benchmark's recorded aggregates describe the whole iteration, not this share, so
    they are not kept as this share's own.
    """
    runs = [
        run
        for run in parsed.runs
        if (eval_folder_of(run) in eval_folders)
        or (run.source_relpath.startswith(BENCHMARK_RUN) and run.eval_id in eval_ids)
    ]
    kept = {run.source_relpath for run in runs}
    keys = {relpath.replace("/", "-") for relpath in kept} | {
        relpath.removeprefix("runs/").replace("/", "-") for relpath in kept
    }
    parsed.runs = runs
    ran = {run.eval_id for run in runs}
    parsed.evals = {eval_id: d for eval_id, d in parsed.evals.items() if eval_id in ran}
    parsed.reviews = [review for review in parsed.reviews if review.run_relpath_key in keys]
    present = {run.condition for run in runs}
    parsed.conditions = [c for c in parsed.conditions if c.name in present]
    for position, condition in enumerate(parsed.conditions):
        condition.position = position
    if parsed.recorded_benchmark is not None:
        file = f"{parsed.source_path}/benchmark.json"
        parsed.notices.append(ValidityWarning("benchmark-of-several-skills", {"file": file}))
        parsed.recorded_benchmark = None
    return parsed
