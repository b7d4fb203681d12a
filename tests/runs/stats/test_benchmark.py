"""The eval-magic-compatible benchmark: real baselines to the digit, rounding, schema, signs."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft7Validator

from runs.stats import (
    RunSample,
    benchmark_disagreements,
    build_benchmark,
    condition_delta,
    delta_treatment_minus_control,
    js_round,
    metric_stats,
)

from .baselines import benchmark_schema, load_baseline, real_skill_params, skill_loading

VALIDATOR = Draft7Validator(benchmark_schema())


def rebuild(skill_dir: Path) -> tuple[dict, dict]:
    """Return (recomputed, recorded) benchmarks of a real baseline."""
    recorded, runs, _ = load_baseline(skill_dir)
    recomputed = build_benchmark(
        runs,
        mode=recorded["mode"],
        conditions_compared=recorded["conditions_compared"],
        skill_conditions=skill_loading(recorded["conditions_compared"]),
        generated=recorded["generated"],
        baseline=recorded.get("baseline"),
        validity_warnings=recorded["validity_warnings"],
    )
    return recomputed, recorded


@pytest.mark.parametrize("skill_dir", real_skill_params())
def test_real_baseline_recomputes_pass_rate_invocation_and_delta_exactly(skill_dir: Path) -> None:
    recomputed, recorded = rebuild(skill_dir)
    for condition, summary in recorded["run_summary"].items():
        ours = recomputed["run_summary"][condition]
        assert ours["pass_rate"] == summary["pass_rate"]
        for key in ("skill_invocation_n", "skill_invocation_rate"):
            assert ours.get(key, "absent") == summary.get(key, "absent"), (condition, key)
    assert recomputed["delta"]["direction"] == recorded["delta"]["direction"]
    assert recomputed["delta"]["pass_rate"] == recorded["delta"]["pass_rate"]
    assert recomputed["missing_gradings"] == recorded["missing_gradings"]
    assert benchmark_disagreements(recomputed, recorded, include_timing=False) == []


@pytest.mark.parametrize("skill_dir", real_skill_params())
def test_real_baseline_recomputed_benchmark_is_schema_valid(skill_dir: Path) -> None:
    recomputed, _ = rebuild(skill_dir)
    assert list(VALIDATOR.iter_errors(recomputed)) == []


@pytest.mark.parametrize("skill_dir", real_skill_params())
def test_recorded_delta_normalised_matches_the_paired_delta(skill_dir: Path) -> None:
    # One run per eval in these baselines, so the pooled and the per-eval means coincide.
    recorded, runs, _ = load_baseline(skill_dir)
    normalised = delta_treatment_minus_control(recorded["delta"])
    treatment, control = normalised["direction"].split(" - ")
    delta = condition_delta(runs, treatment=treatment, control=control)
    assert delta is not None
    assert js_round(delta.mean, 3) == pytest.approx(normalised["pass_rate"], abs=0.0015)


def test_revision_delta_is_negated_to_treatment_minus_control() -> None:
    recorded = {
        "direction": "old_skill - new_skill",
        "pass_rate": -0.25,
        "duration_ms": 1200,
        "total_tokens": 0,
    }
    assert delta_treatment_minus_control(recorded) == {
        "direction": "new_skill - old_skill",
        "pass_rate": 0.25,
        "duration_ms": -1200,
        "total_tokens": 0,
    }
    assert math.copysign(1, delta_treatment_minus_control(recorded)["total_tokens"]) == 1


def test_new_skill_delta_keeps_its_sign() -> None:
    recorded = {
        "direction": "with_skill - without_skill",
        "pass_rate": -0.084,
        "duration_ms": 18415,
        "total_tokens": -716,
    }
    assert delta_treatment_minus_control(recorded) == recorded


def test_a_delta_between_two_treatments_is_rejected() -> None:
    with pytest.raises(ValueError, match="not treatment vs control"):
        delta_treatment_minus_control({"direction": "with_skill - new_skill", "pass_rate": 0})


@pytest.mark.parametrize(
    ("value", "decimals", "expected"),
    [
        # Checked against node's Math.round(x * 10**d) / 10**d.
        (1.0005, 3, 1.001),
        (2.675, 0, 3),
        (0.8335, 3, 0.834),
        (-0.0845, 3, -0.084),
        (-2.5, 0, -2),
        (2.5, 0, 3),
        (0.49999999999999994, 0, 0),
        (-0.08400000000000007, 3, -0.084),
        (-1.2345, 3, -1.234),
        (0.0625, 3, 0.063),
        (-0.0625, 3, -0.062),
        (-61176.5, 0, -61176),
    ],
)
def test_js_round_matches_javascript_math_round(
    value: float, decimals: int, expected: float
) -> None:
    assert js_round(value, decimals) == expected


def test_js_round_never_returns_negative_zero() -> None:
    assert math.copysign(1, js_round(-0.0004, 3)) == 1


@given(st.floats(min_value=-1e9, max_value=1e9, allow_nan=False), st.integers(0, 3))
def test_js_round_is_nearest_with_ties_toward_positive_infinity(
    value: float, decimals: int
) -> None:
    scaled = Fraction(value * 10**decimals)  # the double JavaScript rounds, exactly
    expected = math.floor(scaled + Fraction(1, 2)) / 10**decimals
    assert js_round(value, decimals) == expected


def test_metric_stats_uses_population_stddev_and_reports_unavailable_as_zero() -> None:
    assert metric_stats([0.75, 0.75, 1.0], 3) == {"mean": 0.833, "stddev": 0.118, "n": 3}
    assert metric_stats([42.0], 0) == {"mean": 42, "stddev": 0, "n": 1}
    assert metric_stats([], 0) == {"mean": 0, "stddev": 0, "n": 0}


def sample(eval_id: str, condition: str, run: int = 1, **values: object) -> RunSample:
    return RunSample(eval_id=eval_id, condition=condition, run_index=run, **values)  # type: ignore[arg-type]


def test_runs_without_grading_are_counted_missing_and_left_out() -> None:
    runs = [
        sample("a", "with_skill", pass_rate=1.0, duration_ms=100, total_tokens=10),
        sample("a", "with_skill", 2, duration_ms=999_999, total_tokens=999_999),
        sample("a", "without_skill", pass_rate=0.5, skill_invoked=None),
    ]
    benchmark = build_benchmark(
        runs,
        mode="new-skill",
        conditions_compared=["with_skill", "without_skill"],
        skill_conditions=["with_skill"],
        generated="2026-01-01T00:00:00.000Z",
    )
    assert benchmark["missing_gradings"] == 1
    with_skill = benchmark["run_summary"]["with_skill"]
    assert with_skill["pass_rate"] == {"mean": 1, "stddev": 0, "n": 1}
    assert with_skill["duration_ms"] == {"mean": 100, "stddev": 0, "n": 1}
    assert with_skill["skill_invocation_n"] == 0
    assert with_skill["skill_invocation_rate"] is None
    assert "skill_invocation_n" not in benchmark["run_summary"]["without_skill"]
    assert benchmark["delta"]["pass_rate"] == 0.5
    assert "baseline" not in benchmark
    assert list(VALIDATOR.iter_errors(benchmark)) == []


def test_revision_benchmark_carries_baseline_and_invocation_for_both_arms() -> None:
    runs = [
        sample("a", "old_skill", pass_rate=1.0, skill_invoked=True),
        sample("a", "new_skill", pass_rate=0.5, skill_invoked=False),
    ]
    benchmark = build_benchmark(
        runs,
        mode="revision",
        conditions_compared=["old_skill", "new_skill"],
        skill_conditions=["old_skill", "new_skill"],
        generated="2026-01-01T00:00:00.000Z",
        baseline="pre-split",
    )
    assert benchmark["baseline"] == "pre-split"
    assert benchmark["delta"]["direction"] == "old_skill - new_skill"
    assert benchmark["delta"]["pass_rate"] == 0.5
    assert benchmark["run_summary"]["new_skill"]["skill_invocation_rate"] == 0
    assert list(VALIDATOR.iter_errors(benchmark)) == []


def test_delta_subtracts_rounded_means_then_rounds() -> None:
    # Raw means 0.8333… and 0.9166… differ by −0.0833…, but eval-magic subtracts the rounded
    # 0.833 and 0.917 and reports −0.084.
    runs = [sample("e", "with_skill", i, pass_rate=p) for i, p in enumerate([0.75, 0.75, 1.0])]
    runs += [sample("e", "without_skill", i, pass_rate=p) for i, p in enumerate([0.75, 1, 1])]
    benchmark = build_benchmark(
        runs,
        mode="new-skill",
        conditions_compared=["with_skill", "without_skill"],
        skill_conditions=["with_skill"],
        generated="x",
    )
    assert benchmark["delta"]["pass_rate"] == -0.084


def test_disagreements_name_the_figure_and_both_values() -> None:
    runs = [sample("a", "with_skill", pass_rate=1.0), sample("a", "without_skill", pass_rate=0.0)]
    recomputed = build_benchmark(
        runs,
        mode="new-skill",
        conditions_compared=["with_skill", "without_skill"],
        skill_conditions=["with_skill"],
        generated="x",
    )
    recorded = json.loads(json.dumps(recomputed))
    assert benchmark_disagreements(recomputed, recorded) == []
    recorded["run_summary"]["with_skill"]["pass_rate"]["mean"] = 0.9
    recorded["delta"]["pass_rate"] = 0.9
    assert benchmark_disagreements(recomputed, recorded) == [
        "run_summary.with_skill.pass_rate.mean: recorded 0.9, recomputed 1",
        "delta.pass_rate: recorded 0.9, recomputed 1",
    ]


runs_strategy = st.lists(
    st.builds(
        RunSample,
        eval_id=st.sampled_from(["a", "b", "c"]),
        condition=st.sampled_from(["with_skill", "without_skill"]),
        run_index=st.integers(1, 3),
        pass_rate=st.none() | st.sampled_from([0.0, 1 / 3, 0.5, 2 / 3, 0.75, 1.0]),
        duration_ms=st.none() | st.integers(0, 10**6),
        total_tokens=st.none() | st.integers(0, 10**6),
        skill_invoked=st.none() | st.booleans(),
    ),
    max_size=20,
)


def build(runs: list[RunSample]) -> dict:
    return build_benchmark(
        runs,
        mode="new-skill",
        conditions_compared=["with_skill", "without_skill"],
        skill_conditions=["with_skill"],
        generated="2026-01-01T00:00:00.000Z",
        outcomes=[],
    )


@given(runs_strategy, st.randoms(use_true_random=False))
def test_reordering_runs_changes_nothing(runs: list[RunSample], rng: random.Random) -> None:
    shuffled = list(runs)
    rng.shuffle(shuffled)
    assert build(shuffled) == build(runs)


@given(runs_strategy)
def test_every_built_benchmark_is_schema_valid(runs: list[RunSample]) -> None:
    assert list(VALIDATOR.iter_errors(build(runs))) == []


@given(runs_strategy)
def test_n_counts_graded_non_null_values_and_pass_rates_stay_in_range(
    runs: list[RunSample],
) -> None:
    benchmark = build(runs)
    for condition, summary in benchmark["run_summary"].items():
        graded = [r for r in runs if r.condition == condition and r.pass_rate is not None]
        assert summary["pass_rate"]["n"] == len(graded)
        assert summary["duration_ms"]["n"] == sum(r.duration_ms is not None for r in graded)
        assert 0 <= summary["pass_rate"]["mean"] <= 1
        assert 0 <= summary["pass_rate"]["stddev"] <= 0.5
    assert benchmark["missing_gradings"] == sum(r.pass_rate is None for r in runs)
