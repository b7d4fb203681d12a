"""Per-eval and condition scores, paired deltas, pass@k / pass^k, invocation rates."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runs.stats import (
    RunSample,
    condition_delta,
    condition_score,
    false_trigger_rate,
    paired_delta,
    pass_at_k,
    pass_hat_k,
    pass_rate_gain_per_1k_tokens,
    per_eval_scores,
    repeated_run_score,
    skill_invocation_rate,
)

from .baselines import load_baseline, real_skill_params, should_trigger, skill_loading


def run(eval_id: str, condition: str, pass_rate: float | None, index: int = 1) -> RunSample:
    return RunSample(eval_id=eval_id, condition=condition, run_index=index, pass_rate=pass_rate)


def test_per_eval_score_is_the_mean_of_its_graded_runs() -> None:
    runs = [
        run("a", "with_skill", 1.0, 1),
        run("a", "with_skill", 0.5, 2),
        run("a", "with_skill", None, 3),
        run("b", "with_skill", 0.0),
        run("b", "without_skill", 1.0),
    ]
    assert per_eval_scores(runs, "with_skill") == {"a": 0.75, "b": 0.0}


def test_condition_score_weighs_each_eval_the_same_however_many_runs_it_has() -> None:
    runs = [run("a", "with_skill", 1.0, i) for i in range(1, 10)] + [run("b", "with_skill", 0.0)]
    score = condition_score(runs, "with_skill")
    assert score is not None
    assert score.mean == 0.5  # not 0.9, which pooling the runs would give
    assert (score.n_evals, score.n_runs) == (2, 10)
    assert score.interval is not None and score.interval.contains(0.5)


def test_condition_score_uses_swl_weights_and_defaults_missing_ones_to_one() -> None:
    runs = [run("a", "with_skill", 1.0), run("b", "with_skill", 0.0), run("c", "with_skill", 0.0)]
    score = condition_score(runs, "with_skill", weights={"a": 2.0})
    assert score is not None
    assert score.mean == pytest.approx(0.5)


def test_condition_score_of_one_eval_has_no_interval_and_of_none_is_none() -> None:
    score = condition_score([run("a", "with_skill", 0.5)], "with_skill")
    assert score is not None and score.interval is None
    assert condition_score([run("a", "with_skill", None)], "with_skill") is None


def test_rows_may_be_plain_mappings_with_extra_keys() -> None:
    rows = [
        {"eval_id": "a", "condition": "with_skill", "pass_rate": 1.0, "id": 7},
        {"eval_id": "b", "condition": "with_skill", "pass_rate": 0.0, "id": 8},
    ]
    score = condition_score(rows, "with_skill")
    assert score is not None and score.mean == 0.5


def test_paired_delta_uses_only_evals_present_in_both_arms() -> None:
    delta = paired_delta({"a": 1.0, "b": 0.5, "only_t": 1.0}, {"a": 0.0, "b": 0.5, "only_c": 0.0})
    assert delta is not None
    assert delta.n == 2
    assert dict(delta.differences) == {"a": 1.0, "b": 0.0}
    assert delta.mean == 0.5


def test_paired_delta_with_no_shared_eval_is_none() -> None:
    assert paired_delta({"a": 1.0}, {"b": 0.0}) is None


def test_condition_delta_of_five_evals_all_improving() -> None:
    runs = []
    for eval_id, gain in zip("abcde", [0.1, 0.2, 0.3, 0.4, 0.5], strict=True):
        runs += [run(eval_id, "with_skill", 0.5 + gain), run(eval_id, "without_skill", 0.5)]
    delta = condition_delta(runs, treatment="with_skill", control="without_skill")
    assert delta is not None
    assert delta.mean == pytest.approx(0.3)
    assert delta.p_value == 0.0625
    assert delta.significant


scores_strategy = st.dictionaries(
    st.sampled_from(list("abcdefgh")), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), max_size=8
)


@given(scores_strategy, scores_strategy)
def test_swapping_roles_negates_the_delta_and_mirrors_its_interval(
    treatment: dict[str, float], control: dict[str, float]
) -> None:
    forward = paired_delta(treatment, control)
    backward = paired_delta(control, treatment)
    if forward is None:
        assert backward is None
        return
    assert backward is not None
    assert backward.mean == pytest.approx(-forward.mean, abs=1e-12)
    assert backward.p_value == pytest.approx(forward.p_value)
    if forward.interval is not None:
        assert backward.interval is not None
        assert backward.interval.low == pytest.approx(-forward.interval.high, abs=1e-12)
        assert backward.interval.high == pytest.approx(-forward.interval.low, abs=1e-12)


@given(scores_strategy, scores_strategy)
def test_paired_delta_interval_contains_its_mean_and_stays_in_bounds(
    treatment: dict[str, float], control: dict[str, float]
) -> None:
    delta = paired_delta(treatment, control)
    if delta is None:
        return
    assert -1.0 <= delta.mean <= 1.0
    assert delta.p_value is not None and 0.0 < delta.p_value <= 1.0
    if delta.interval is not None:
        assert -1.0 <= delta.interval.low <= delta.interval.high <= 1.0
        assert delta.interval.contains(delta.mean)


runs_strategy = st.lists(
    st.builds(
        RunSample,
        eval_id=st.sampled_from(list("abcd")),
        condition=st.sampled_from(["with_skill", "without_skill"]),
        run_index=st.integers(1, 3),
        pass_rate=st.none() | st.sampled_from([0.0, 0.5, 1.0]),
    ),
    max_size=24,
)


@given(runs_strategy, st.randoms(use_true_random=False))
def test_reordering_runs_changes_no_score_or_delta(
    runs: list[RunSample], rng: random.Random
) -> None:
    shuffled = list(runs)
    rng.shuffle(shuffled)
    for condition in ("with_skill", "without_skill"):
        assert condition_score(shuffled, condition) == condition_score(runs, condition)
    kwargs = {"treatment": "with_skill", "control": "without_skill"}
    assert condition_delta(shuffled, **kwargs) == condition_delta(runs, **kwargs)


@given(runs_strategy)
def test_equal_per_eval_scores_in_both_arms_give_a_zero_delta(runs: list[RunSample]) -> None:
    mirrored = runs + [
        RunSample(
            r.eval_id,
            "without_skill" if r.condition == "with_skill" else "with_skill",
            r.run_index,
            r.pass_rate,
        )
        for r in runs
    ]
    delta = condition_delta(mirrored, treatment="with_skill", control="without_skill")
    if delta is not None:
        assert delta.mean == pytest.approx(0.0, abs=1e-12)
        assert delta.p_value == 1.0


@pytest.mark.parametrize(
    ("n", "c", "k", "at_k", "hat_k"),
    [
        (3, 1, 1, 1 / 3, 1 / 3),
        (3, 1, 2, 2 / 3, 0.0),
        (4, 2, 2, 5 / 6, 1 / 6),
        (5, 5, 3, 1.0, 1.0),
        (5, 0, 3, 0.0, 0.0),
        (2, 1, 2, 1.0, 0.0),
    ],
)
def test_pass_at_k_and_pass_hat_k_on_small_counts(
    n: int, c: int, k: int, at_k: float, hat_k: float
) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(at_k)
    assert pass_hat_k(n, c, k) == pytest.approx(hat_k)


def test_pass_at_k_rejects_k_larger_than_the_runs() -> None:
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
    )
)
def test_pass_hat_k_never_exceeds_the_pass_rate_which_never_exceeds_pass_at_k(
    counts: tuple[int, int, int],
) -> None:
    n, c, k = counts
    assert pass_hat_k(n, c, k) <= c / n + 1e-12 <= pass_at_k(n, c, k) + 2e-12


def test_repeated_run_score_averages_evals_with_enough_runs_and_counts_full_passes() -> None:
    runs = [run("a", "with_skill", r, i) for i, r in enumerate([1.0, 1.0, 0.5], start=1)]
    runs += [run("b", "with_skill", r, i) for i, r in enumerate([1.0, 0.0, 0.0], start=1)]
    runs += [run("c", "with_skill", 1.0)]  # one run: not enough for k = 2
    score = repeated_run_score(runs, "with_skill", 2)
    assert score is not None
    assert score.n_evals == 2
    assert score.pass_at_k == pytest.approx((1.0 + 2 / 3) / 2)
    assert score.pass_hat_k == pytest.approx((1 / 3 + 0.0) / 2)
    assert repeated_run_score(runs, "with_skill", 4) is None


def invocation_run(
    eval_id: str, condition: str, meta: bool | None, transcript: bool | None = None
) -> RunSample:
    return RunSample(
        eval_id, condition, 1, 1.0, skill_invoked=meta, invoked_in_transcript=transcript
    )


def test_invocation_rate_counts_only_skill_conditions_and_positive_evals() -> None:
    runs = [
        invocation_run("a", "with_skill", True),
        invocation_run("b", "with_skill", False),
        invocation_run("c", "with_skill", None, transcript=True),
        invocation_run("neg", "with_skill", None, transcript=True),
        invocation_run("a", "without_skill", None),
    ]
    triggers = {"a": None, "b": True, "c": None, "neg": False}
    rates = skill_invocation_rate(runs, skill_conditions=["with_skill"], should_trigger=triggers)
    assert list(rates) == ["with_skill"]
    assert (rates["with_skill"].successes, rates["with_skill"].n) == (2, 3)
    false_triggers = false_trigger_rate(
        runs, skill_conditions=["with_skill"], should_trigger=triggers
    )
    assert (false_triggers["with_skill"].successes, false_triggers["with_skill"].n) == (1, 1)
    assert false_triggers["with_skill"].interval is not None


def test_invocation_rate_with_nothing_to_count_has_no_rate() -> None:
    rates = skill_invocation_rate([], skill_conditions=["with_skill"], should_trigger={})
    assert rates["with_skill"].n == 0
    assert rates["with_skill"].rate is None and rates["with_skill"].interval is None


@pytest.mark.parametrize("skill_dir", real_skill_params())
def test_real_invocation_rate_agrees_with_the_recorded_benchmark(skill_dir: Path) -> None:
    recorded, runs, _ = load_baseline(skill_dir)
    conditions = skill_loading(recorded["conditions_compared"])
    rates = skill_invocation_rate(
        runs, skill_conditions=conditions, should_trigger=should_trigger(skill_dir)
    )
    for condition in conditions:
        summary = recorded["run_summary"][condition]
        assert rates[condition].n == summary["skill_invocation_n"]
        assert rates[condition].rate == pytest.approx(summary["skill_invocation_rate"], abs=5e-4)


def test_gain_per_1k_tokens_only_when_the_treatment_costs_more() -> None:
    assert pass_rate_gain_per_1k_tokens(0.6, 1221) == pytest.approx(0.6 / 1.221)
    assert pass_rate_gain_per_1k_tokens(-0.084, -716) is None
    assert pass_rate_gain_per_1k_tokens(0.1, 0) is None
