"""An iteration's benchmark.json (its own address, the API and `manage.py benchmark`)."""

from __future__ import annotations

from typing import Any

from .. import stats
from ..models import Iteration
from ..roles import DEFAULT_ORDER
from ..warnings import messages
from .samples import assertion_outcomes, run_samples


def eval_magic_benchmark(iteration: Iteration) -> dict[str, Any]:
    """SPEC §4.1: the benchmark.json eval-magic would write for this iteration, recomputed."""
    conditions = list(iteration.conditions.all())
    names = [c.name for c in conditions]
    recorded = (iteration.recorded_benchmark or {}).get("conditions_compared")
    if recorded and set(recorded) <= set(names):
        compared = list(recorded)
    elif set(DEFAULT_ORDER[iteration.mode]) <= set(names):
        compared = DEFAULT_ORDER[iteration.mode]  # eval-magic's order for the mode
    else:
        compared = names[:2]
    if len(compared) < 2:
        raise ValueError(f"{iteration} has one condition; a benchmark compares two")
    generated = ""
    if iteration.generated_at:
        generated = iteration.generated_at.isoformat().replace("+00:00", "Z")
    return stats.build_benchmark(
        run_samples(iteration),
        mode=iteration.mode,
        conditions_compared=compared,
        skill_conditions={c.name for c in conditions if c.loads_skill},
        generated=generated,
        baseline=iteration.baseline or None,
        validity_warnings=messages(iteration.validity_warnings),
        outcomes=assertion_outcomes([iteration]),
    )
