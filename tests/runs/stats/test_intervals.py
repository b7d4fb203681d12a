"""Wilson, clustered mean, Welch, permutation tests and Holm."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runs.stats import (
    holm_adjust,
    mean_interval,
    sign_flip_p_value,
    t_quantile,
    two_sample_permutation_p_value,
    welch_interval,
    wilson_interval,
)

Z = 1.959963984540054


def test_wilson_interval_for_zero_of_ten() -> None:
    interval = wilson_interval(0, 10)
    assert interval is not None
    assert interval.low == 0.0
    # Upper bound z²/(n + z²) = 3.841459/13.841459.
    assert interval.high == pytest.approx(0.277533, abs=1e-6)


def test_wilson_interval_for_ten_of_ten() -> None:
    interval = wilson_interval(10, 10)
    assert interval is not None
    assert interval.low == pytest.approx(10 / (10 + Z * Z), abs=1e-12)
    assert interval.low == pytest.approx(0.722467, abs=1e-6)
    assert interval.high == 1.0


def test_wilson_interval_for_five_of_ten_is_symmetric_around_a_half() -> None:
    interval = wilson_interval(5, 10)
    assert interval is not None
    assert (interval.low, interval.high) == pytest.approx((0.236593, 0.763407), abs=1e-6)


def test_wilson_interval_of_no_trials_is_none() -> None:
    assert wilson_interval(0, 0) is None


@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_contains_the_observed_rate_and_stays_in_zero_one(
    counts: tuple[int, int],
) -> None:
    k, n = counts
    interval = wilson_interval(k, n)
    assert interval is not None
    assert 0.0 <= interval.low <= k / n <= interval.high <= 1.0


def test_mean_interval_is_mean_plus_minus_t_sd_over_root_n() -> None:
    estimate = mean_interval([0.5, 0.7, 0.9])
    assert estimate is not None
    assert estimate.value == pytest.approx(0.7)
    assert estimate.se == pytest.approx(0.2 / math.sqrt(3))
    half = 4.302653 * 0.2 / math.sqrt(3)
    assert estimate.interval is not None
    assert (estimate.interval.low, estimate.interval.high) == pytest.approx(
        (0.7 - half, 0.7 + half), abs=1e-6
    )


def test_mean_interval_is_clipped_to_its_bounds() -> None:
    estimate = mean_interval([0.5, 0.7, 0.9], bounds=(0.0, 1.0))
    assert estimate is not None and estimate.interval is not None
    assert estimate.interval.high == 1.0


def test_mean_interval_of_one_value_has_no_interval() -> None:
    estimate = mean_interval([0.4])
    assert estimate is not None
    assert (estimate.value, estimate.se, estimate.interval) == (0.4, None, None)


def test_heavier_weight_pulls_the_mean_toward_its_eval() -> None:
    estimate = mean_interval([0.0, 1.0], [1.0, 3.0])
    assert estimate is not None
    assert estimate.value == pytest.approx(0.75)


unit_values = st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=12)


@given(unit_values)
def test_weights_all_one_equal_the_unweighted_mean_interval(values: list[float]) -> None:
    assert mean_interval(values, [1.0] * len(values)) == mean_interval(values)


@given(unit_values, st.floats(min_value=0.01, max_value=100))
def test_scaling_every_weight_alike_changes_nothing(values: list[float], scale: float) -> None:
    weights = [1.0 + i % 3 for i in range(len(values))]
    a = mean_interval(values, weights)
    b = mean_interval(values, [w * scale for w in weights])
    assert a is not None and b is not None
    assert b.value == pytest.approx(a.value, abs=1e-9)
    if a.interval is not None:
        assert b.interval is not None
        assert b.interval.low == pytest.approx(a.interval.low, abs=1e-9)
        assert b.interval.high == pytest.approx(a.interval.high, abs=1e-9)


@given(unit_values, st.lists(st.floats(min_value=0.1, max_value=10), min_size=12, max_size=12))
def test_mean_interval_contains_the_estimate(values: list[float], weights: list[float]) -> None:
    estimate = mean_interval(values, weights[: len(values)], bounds=(0.0, 1.0))
    assert estimate is not None
    assert min(values) - 1e-12 <= estimate.value <= max(values) + 1e-12
    if estimate.interval is not None:
        assert estimate.interval.contains(estimate.value)


def test_welch_interval_uses_satterthwaite_degrees_of_freedom() -> None:
    estimate = welch_interval([[2.0, 4.0, 6.0, 8.0]], [[1.0, 2.0, 3.0, 4.0]])
    assert estimate is not None and estimate.se is not None and estimate.interval is not None
    assert estimate.value == pytest.approx(2.5)
    assert estimate.se == pytest.approx(math.sqrt(5 / 12 + 20 / 12))
    # df = (5/12 + 20/12)² / ((5/12)²/3 + (20/12)²/3) = 4.4118.
    half = t_quantile(0.975, 4.411764705882353) * estimate.se
    assert estimate.interval.high == pytest.approx(2.5 + half)


def test_welch_interval_needs_two_runs_a_side() -> None:
    estimate = welch_interval([[1.0]], [[0.0, 0.5]])
    assert estimate is not None
    assert estimate.value == pytest.approx(0.75)
    assert estimate.interval is None


def test_permutation_p_for_five_evals_all_improving_is_one_in_sixteen() -> None:
    assert sign_flip_p_value([0.1, 0.2, 0.3, 0.4, 0.5]) == 0.0625


def test_permutation_p_when_nothing_changed_is_one() -> None:
    assert sign_flip_p_value([0.0, 0.0, 0.0]) == 1.0


def test_permutation_p_of_no_evals_is_none() -> None:
    assert sign_flip_p_value([]) is None


def brute_force_sign_flip(differences: list[float]) -> float:
    observed = abs(sum(differences))
    flips = list(itertools.product((1, -1), repeat=len(differences)))
    hits = sum(
        abs(sum(s * d for s, d in zip(signs, differences, strict=True))) >= observed - 1e-12
        for signs in flips
    )
    return hits / len(flips)


# Coarse values make ties between flips common, which is where a tolerance bug would show.
differences_strategy = st.lists(st.integers(-4, 4).map(lambda k: k / 4), min_size=1, max_size=10)


@given(differences_strategy)
def test_sign_flip_p_matches_brute_force_enumeration(differences: list[float]) -> None:
    assert sign_flip_p_value(differences) == pytest.approx(brute_force_sign_flip(differences))


@given(differences_strategy, st.randoms(use_true_random=False))
def test_sign_flip_p_is_in_zero_one_and_ignores_order_and_sign(
    differences: list[float], rng: random.Random
) -> None:
    p = sign_flip_p_value(differences)
    assert p is not None and 0.0 < p <= 1.0
    assert p >= 2 / 2 ** len(differences) - 1e-15
    shuffled = list(differences)
    rng.shuffle(shuffled)
    assert sign_flip_p_value(shuffled) == pytest.approx(p)
    assert sign_flip_p_value([-d for d in differences]) == pytest.approx(p)


def test_sign_flip_beyond_twenty_evals_is_exact_for_pass_rate_fractions() -> None:
    differences = [0.1 * (i % 5 + 1) for i in range(25)]
    # Only the identity and its mirror image are as extreme: 2 of 2^25 flips.
    assert sign_flip_p_value(differences) == 2 / 2**25
    mixed = [(-1) ** i * 0.2 for i in range(25)]
    assert sign_flip_p_value(mixed) == 1.0


def test_the_exact_count_agrees_with_listing_every_flip() -> None:
    import itertools

    differences = [1 / 3, -2 / 3, 0.5, 0.25, -0.25, 1.0, 2 / 3, 0.0, -1 / 6]
    observed = abs(sum(differences)) - 1e-9
    flips = list(itertools.product((1, -1), repeat=len(differences)))
    expected = sum(
        1
        for signs in flips
        if abs(sum(s * d for s, d in zip(signs, differences, strict=True))) >= observed
    ) / len(flips)

    assert sign_flip_p_value(differences) == pytest.approx(expected)


def test_sign_flip_of_unrationalisable_terms_beyond_twenty_is_seeded_monte_carlo() -> None:
    differences = [math.sqrt(2) * (i % 5 + 1) / 10 for i in range(25)]
    p = sign_flip_p_value(differences)
    assert p == sign_flip_p_value(differences)  # the same data gives the same p
    assert p == pytest.approx(1 / 20_001)  # no random flip is as extreme, identity counted


def test_two_sample_permutation_for_three_passes_against_three_failures() -> None:
    # 2 of the C(6, 3) = 20 relabellings are as extreme.
    assert two_sample_permutation_p_value([1.0, 1.0, 1.0], [0.0, 0.0, 0.0]) == pytest.approx(0.1)


def test_two_sample_permutation_of_one_run_each_concludes_nothing() -> None:
    assert two_sample_permutation_p_value([0.0], [1.0]) == 1.0
    assert two_sample_permutation_p_value([], [1.0]) is None


@given(
    st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=1, max_size=6),
    st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=1, max_size=6),
)
def test_two_sample_permutation_p_is_symmetric_and_in_zero_one(
    first: list[float], second: list[float]
) -> None:
    p = two_sample_permutation_p_value(first, second)
    assert p is not None and 0.0 < p <= 1.0
    assert two_sample_permutation_p_value(second, first) == pytest.approx(p)


def test_holm_adjustment_of_four_p_values() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 → ×4, ×3, ×2, ×1 = 0.02, 0.03, 0.06, 0.04 → running max.
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_adjustment_caps_at_one_and_keeps_a_single_p() -> None:
    assert holm_adjust([0.6, 0.7]) == [1.0, 1.0]
    assert holm_adjust([0.04]) == [0.04]
    assert holm_adjust([]) == []


@given(st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=15))
def test_holm_adjusted_p_values_are_valid_and_keep_their_order(p_values: list[float]) -> None:
    adjusted = holm_adjust(p_values)
    for raw, adj in zip(p_values, adjusted, strict=True):
        assert raw <= adj <= 1.0
        assert adj <= min(1.0, raw * len(p_values)) + 1e-12  # never worse than Bonferroni
    for (r1, a1), (r2, a2) in itertools.combinations(zip(p_values, adjusted, strict=True), 2):
        if r1 < r2:
            assert a1 <= a2
