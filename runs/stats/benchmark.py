"""eval-magic-compatible benchmark (SPEC §4.1), reproduced to the digit.

eval-magic is TypeScript, so rounding follows JavaScript's `Math.round(x * 10^d) / 10^d`
(halves go toward +infinity), and integral numbers are returned as `int` so that
`json.dumps` writes `1` where `JSON.stringify` writes `1`. Means and population standard
deviations are summed with `math.fsum`, which is order-independent; eval-magic sums in
directory order, which can differ in the last bit only, below any rounding that shows.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from .rows import (
    AssertionOutcome,
    OutcomeRow,
    RunRow,
    RunSample,
    as_assertion_outcomes,
    as_run_samples,
    condition_role,
)

MODES = ("new-skill", "revision")
METRIC_DECIMALS = {"pass_rate": 3, "duration_ms": 0, "total_tokens": 0}
INVOCATION_DECIMALS = 3
# Recomputed and recorded numbers went through the same rounding; anything beyond float
# noise is a real disagreement.
_SAME = 1e-9


def js_round(value: float, decimals: int = 0) -> float:
    """Return Math.round(value * 10**decimals) / 10**decimals as JavaScript computes it."""
    scale = 10**decimals
    scaled = value * scale
    whole = math.floor(scaled)
    # scaled - floor(scaled) is exact for doubles, so this is Math.round's tie rule exactly
    # (floor(x + 0.5) would misround 0.49999999999999994).
    rounded = whole + 1 if scaled - whole >= 0.5 else whole
    return rounded / scale + 0.0  # + 0.0 turns -0.0 into 0.0


def js_number(value: float) -> int | float:
    """Return value as an int when integral, as JSON.stringify would print it."""
    return int(value) if float(value).is_integer() else float(value)


def metric_stats(values: Sequence[float], decimals: int) -> dict[str, int | float]:
    """Return {mean, stddev, n}: rounded mean and population sd, {0, 0, 0} when unavailable."""
    n = len(values)
    if n == 0:
        return {"mean": 0, "stddev": 0, "n": 0}
    mean = math.fsum(values) / n
    stddev = math.sqrt(math.fsum((x - mean) ** 2 for x in values) / n) if n >= 2 else 0.0
    return {
        "mean": js_number(js_round(mean, decimals)),
        "stddev": js_number(js_round(stddev, decimals)),
        "n": n,
    }


def _condition_summary(runs: list[RunSample], loads_skill: bool) -> dict[str, Any]:
    summary: dict[str, Any] = {
        metric: metric_stats([v for r in runs if (v := getattr(r, metric)) is not None], decimals)
        for metric, decimals in METRIC_DECIMALS.items()
    }
    if loads_skill:
        verdicts = [r.skill_invoked for r in runs if r.skill_invoked is not None]
        summary["skill_invocation_n"] = len(verdicts)
        summary["skill_invocation_rate"] = (
            js_number(js_round(sum(verdicts) / len(verdicts), INVOCATION_DECIMALS))
            if verdicts
            else None
        )
    return summary


def _assertion_counts(outcomes: list[AssertionOutcome]) -> dict[str, Any]:
    counts: dict[str, Any] = {}
    for o in sorted(outcomes, key=lambda o: (o.eval_id, o.assertion_id, o.condition)):
        cell = counts.setdefault(o.eval_id, {}).setdefault(o.assertion_id, {})
        tally = cell.setdefault(o.condition, {"passed": 0, "n": 0})
        tally["passed"] += o.passed
        tally["n"] += 1
    return counts


def build_benchmark(
    runs: Iterable[RunRow],
    *,
    mode: str,
    conditions_compared: Sequence[str],
    skill_conditions: Collection[str],
    generated: str,
    baseline: str | None = None,
    validity_warnings: Sequence[str] = (),
    outcomes: Iterable[OutcomeRow] | None = None,
) -> dict[str, Any]:
    """Return the benchmark.json eval-magic would write for these runs (schema-valid).

    Runs without a grading (pass_rate None) are counted in missing_gradings and left out of
    every figure, as eval-magic pools only graded runs. `conditions_compared` is in
    eval-magic's order ([with_skill, without_skill] or [old_skill, new_skill]); the delta is
    its [0] − [1], each side's rounded mean subtracted and rounded again. `outcomes`, when
    given, adds the per-assertion `assertions` rollup of newer eval-magic releases.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if len(conditions_compared) != 2:
        raise ValueError("conditions_compared must name exactly two conditions")
    samples = as_run_samples(runs)
    graded = [r for r in samples if r.graded]
    conditions = list(dict.fromkeys([*conditions_compared, *(r.condition for r in samples)]))
    run_summary = {
        c: _condition_summary([r for r in graded if r.condition == c], c in skill_conditions)
        for c in conditions
    }
    first, second = (run_summary[c] for c in conditions_compared)
    delta: dict[str, Any] = {"direction": f"{conditions_compared[0]} - {conditions_compared[1]}"}
    for metric, decimals in METRIC_DECIMALS.items():
        difference = first[metric]["mean"] - second[metric]["mean"]
        delta[metric] = js_number(js_round(difference, decimals))

    benchmark: dict[str, Any] = {"generated": generated, "mode": mode}
    if mode == "revision":
        benchmark["baseline"] = baseline
    benchmark.update(
        conditions_compared=list(conditions_compared),
        missing_gradings=len(samples) - len(graded),
        validity_warnings=list(validity_warnings),
        run_summary=run_summary,
    )
    if outcomes is not None:
        benchmark["assertions"] = _assertion_counts(as_assertion_outcomes(outcomes))
    benchmark["delta"] = delta
    return benchmark


def run_sample_from_grading(
    grading: Mapping[str, Any],
    *,
    eval_id: str,
    condition: str,
    run_index: int = 1,
    duration_ms: float | None = None,
    total_tokens: float | None = None,
) -> RunSample:
    """Return the RunSample of one eval-magic grading.json (summary.pass_rate, meta verdict)."""
    meta = grading.get("meta_summary") or {}
    return RunSample(
        eval_id=eval_id,
        condition=condition,
        run_index=run_index,
        pass_rate=grading["summary"]["pass_rate"],
        duration_ms=duration_ms,
        total_tokens=total_tokens,
        skill_invoked=meta.get("skill_invoked"),
    )


def outcomes_from_grading(
    grading: Mapping[str, Any], *, eval_id: str, condition: str, run_index: int = 1
) -> list[AssertionOutcome]:
    """Return the substantive assertion outcomes of one grading.json (meta results excluded)."""
    return [
        AssertionOutcome(eval_id, condition, run_index, result["id"], bool(result["passed"]))
        for result in grading.get("assertion_results", [])
    ]


def _direction(direction: str) -> tuple[str, str]:
    first, separator, second = direction.partition(" - ")
    if not separator or not first or not second:
        raise ValueError(f"delta direction {direction!r} is not of the form '<a> - <b>'")
    return first.strip(), second.strip()


def delta_treatment_minus_control(delta: Mapping[str, Any]) -> dict[str, Any]:
    """Return a recorded benchmark delta re-signed as treatment − control, direction included.

    New-skill mode records "with_skill - without_skill" (kept); revision mode records
    "old_skill - new_skill", where negative means the revision helped (negated).
    Raises ValueError when the direction does not pair a treatment with a control.
    """
    first, second = _direction(delta["direction"])
    roles = (condition_role(first), condition_role(second))
    if roles == ("treatment", "control"):
        sign, treatment, control = 1, first, second
    elif roles == ("control", "treatment"):
        sign, treatment, control = -1, second, first
    else:
        raise ValueError(f"delta direction {delta['direction']!r} is not treatment vs control")
    normalised: dict[str, Any] = {"direction": f"{treatment} - {control}"}
    for metric in METRIC_DECIMALS:
        if delta.get(metric) is not None:
            normalised[metric] = js_number(sign * delta[metric] + 0.0)
    return normalised


def _differ(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return abs(a - b) > _SAME
    return a != b


def benchmark_disagreements(
    recomputed: Mapping[str, Any], recorded: Mapping[str, Any], *, include_timing: bool = True
) -> list[str]:
    """Return one line per figure where the recorded benchmark differs from the recomputed one.

    Empty when they agree. Compares mode, conditions, missing gradings, per-condition stats,
    invocation figures and the delta; not `generated` or the warnings. Pass
    include_timing=False for promoted baselines, whose timing exists only in the record.
    """
    problems: list[str] = []

    def check(path: str, want: Any, got: Any) -> None:
        if _differ(got, want):
            problems.append(f"{path}: recorded {got!r}, recomputed {want!r}")

    for key in ("mode", "conditions_compared", "missing_gradings"):
        check(key, recomputed.get(key), recorded.get(key))
    metrics = [m for m in METRIC_DECIMALS if include_timing or m == "pass_rate"]
    ours, theirs = recomputed.get("run_summary", {}), recorded.get("run_summary", {})
    for condition in sorted(set(ours) ^ set(theirs)):
        side = "recomputed" if condition in ours else "recorded"
        problems.append(f"run_summary.{condition}: only in the {side} benchmark")
    for condition in [c for c in ours if c in theirs]:
        for metric in metrics:
            for stat in ("mean", "stddev", "n"):
                check(
                    f"run_summary.{condition}.{metric}.{stat}",
                    ours[condition].get(metric, {}).get(stat),
                    theirs[condition].get(metric, {}).get(stat),
                )
        for key in ("skill_invocation_n", "skill_invocation_rate"):
            check(
                f"run_summary.{condition}.{key}",
                ours[condition].get(key),
                theirs[condition].get(key),
            )
    ours_delta, theirs_delta = recomputed.get("delta", {}), recorded.get("delta", {})
    for key in ("direction", *metrics):
        check(f"delta.{key}", ours_delta.get(key), theirs_delta.get(key))
    return problems
