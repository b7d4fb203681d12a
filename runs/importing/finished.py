"""The eval-magic benchmark.json of an iteration folder runevals has just written: its runs
read back as the importer reads them, the figures recomputed, evalsite's warnings added."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runs.warnings import messages

from .checks import recomputed_benchmark, validity_warnings
from .eval_magic import read_iteration
from .records import EvalDefinition
from .tree import read_tree


def iteration_benchmark(
    folder: Path,
    *,
    skill_name: str,
    definitions: dict[str, EvalDefinition],
    meta: dict[str, Any],
) -> dict[str, Any]:
    """benchmark.json for `folder` (`meta`: conditions_compared, generated, baseline), its
    `validity_warnings` the sentences of evalsite's warnings about what the runs show."""
    parsed = read_iteration(
        read_tree(folder, display=str(folder)),
        skill_name=skill_name,
        label=folder.name,
        definitions=definitions,
    )
    benchmark = recomputed_benchmark(parsed, meta)
    benchmark["validity_warnings"] = messages(validity_warnings(parsed))
    return benchmark
