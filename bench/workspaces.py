"""The import bench's generated workspace, written once per scale and reused with --keep.

The import, stats and pages benches measure the same tree (bench/generate.py), so a folder
kept with --keep serves all three; the generator's source is part of the key, so a changed
generator writes the tree afresh.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import (
    eval_magic_runs,
    generate,
    generate_skill_creator,
    skill_creator_benchmark,
    texts,
    writing,
)
from bench.generate import generate_workspace
from bench.generate_skill_creator import generate_skill_creator_workspace

#: eval-magic: 5 skills x 20 iterations x 30 evals x 2 conditions x 3 runs = 18,000 runs.
FULL = {"skills": 5, "iterations": 20, "evals": 30, "runs": 3, "assertions": 6}
QUICK = {"skills": 1, "iterations": 3, "evals": 30, "runs": 3, "assertions": 6}
#: skill-creator: one iteration, 300 evals x 2 configurations x 10 runs, 6 expectations.
SKILL_CREATOR_FULL = {"evals": 300, "runs": 10, "assertions": 6}
SKILL_CREATOR_QUICK = {"evals": 30, "runs": 3, "assertions": 6}
#: The modules whose code decides each layout's tree.
GENERATORS = {
    "eval-magic": (generate, eval_magic_runs, texts, writing),
    "skill-creator": (generate_skill_creator, skill_creator_benchmark, texts, writing),
}


@contextlib.contextmanager
def working_folder(keep: Path | None, prefix: str) -> Iterator[Path]:
    """The folder a bench works in: `keep` (made if need be, and kept), or a temporary
    folder removed at the end."""
    base = (keep or Path(tempfile.mkdtemp(prefix=prefix))).resolve()
    base.mkdir(parents=True, exist_ok=True)
    try:
        yield base
    finally:
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)


def _generator_key(layout: str) -> str:
    sources = [Path(module.__file__ or "") for module in GENERATORS[layout]]
    return hashlib.sha256(b"".join(path.read_bytes() for path in sources)).hexdigest()[:16]


def prepare_workspace(
    base: Path, scale: dict[str, int], seed: int, layout: str = "eval-magic"
) -> Path:
    """Generate the workspace under `base`, or reuse one generated there with the same scale."""
    suffix = "" if layout == "eval-magic" else f"-{layout}"
    workspace = base / f"workspace{suffix}"
    manifest = base / f"manifest{suffix}.json"
    wanted = {**scale, "seed": seed, "generator": _generator_key(layout)}
    if workspace.is_dir() and manifest.is_file():
        recorded = json.loads(manifest.read_text())
        if recorded.get("scale") == wanted:
            print(f"workspace: reusing {workspace}")
            return print_workspace(workspace, recorded["counts"], recorded["seconds"])
    shutil.rmtree(workspace, ignore_errors=True)
    start = time.perf_counter()
    if layout == "skill-creator":
        counts = generate_skill_creator_workspace(workspace, seed=seed, **scale)
    else:
        counts = generate_workspace(workspace, seed=seed, **scale)
    seconds = time.perf_counter() - start
    manifest.write_text(json.dumps({"scale": wanted, "counts": counts, "seconds": seconds}))
    # Flush the freshly written files now, or their writeback competes with what is timed.
    os.sync()
    return print_workspace(workspace, counts, seconds)


def print_workspace(workspace: Path, counts: dict[str, Any], seconds: float) -> Path:
    print(
        f"workspace: {counts['skills']} skills, {counts['iterations']} iterations, "
        f"{counts['runs']:,} runs, {counts['assertion_results']:,} assertion results "
        f"(+{counts['meta_results']:,} meta), {counts['files']:,} files, "
        f"{counts['bytes'] / 2**20:,.0f} MB (generated in {seconds:.1f} s)"
    )
    per_run = {k: v / max(counts["runs"], 1) / 1024 for k, v in counts["bytes_by_kind"].items()}
    whole = {"other", "benchmark"}
    print(
        "  per run: "
        + ", ".join(f"{k} {v:.1f} KB" for k, v in per_run.items() if k not in whole)
        + f"  ({workspace})"
    )
    if "benchmark" in counts["bytes_by_kind"]:
        print(f"  benchmark.json: {counts['bytes_by_kind']['benchmark'] / 2**20:.1f} MB")
    return workspace
