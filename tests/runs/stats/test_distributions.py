"""Student-t and incomplete beta against table values and closed forms."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runs.stats import regularized_incomplete_beta, t_cdf, t_quantile


@pytest.mark.parametrize(
    ("df", "two_sided_95", "one_sided_95"),
    [
        # Standard t tables (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2), to the printed digits.
        (1, 12.706, 6.314),
        (2, 4.303, 2.920),
        (5, 2.571, 2.015),
        (10, 2.228, 1.812),
        (30, 2.042, 1.697),
    ],
)
def test_t_quantiles_match_the_table(df: int, two_sided_95: float, one_sided_95: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(two_sided_95, abs=5e-4)
    assert t_quantile(0.95, df) == pytest.approx(one_sided_95, abs=5e-4)


@given(st.floats(min_value=0.001, max_value=0.999))
def test_t_quantile_matches_closed_forms_for_one_and_two_df(p: float) -> None:
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9, abs=1e-9)
    two_df = (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    assert t_quantile(p, 2) == pytest.approx(two_df, rel=1e-9, abs=1e-9)


def test_t_quantile_approaches_the_normal_for_many_df() -> None:
    assert t_quantile(0.975, 100_000) == pytest.approx(1.959964, abs=1e-4)


@given(st.floats(min_value=0.01, max_value=0.99), st.floats(min_value=0.5, max_value=200))
def test_t_cdf_inverts_t_quantile(p: float, df: float) -> None:
    assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-9)


@given(st.floats(min_value=0.01, max_value=0.99), st.floats(min_value=0.5, max_value=200))
def test_t_quantile_is_antisymmetric(p: float, df: float) -> None:
    assert t_quantile(1 - p, df) == pytest.approx(-t_quantile(p, df), rel=1e-9, abs=1e-9)


def test_incomplete_beta_matches_its_binomial_form() -> None:
    # For integer a, b: I_x(a, b) = P(Binomial(a + b − 1, x) ≥ a).
    x, a, b = 0.3, 2, 3
    expected = sum(math.comb(4, j) * x**j * (1 - x) ** (4 - j) for j in range(a, 5))
    assert regularized_incomplete_beta(x, a, b) == pytest.approx(expected, abs=1e-12)


@given(
    # Multiples of 1/1024, so that 1 − x is exact and the symmetry can hold to 1e-9.
    st.integers(0, 1024).map(lambda k: k / 1024),
    st.floats(min_value=0.1, max_value=50),
    st.floats(min_value=0.1, max_value=50),
)
def test_incomplete_beta_is_a_cdf_with_its_symmetry(x: float, a: float, b: float) -> None:
    value = regularized_incomplete_beta(x, a, b)
    assert 0.0 <= value <= 1.0
    mirrored = regularized_incomplete_beta(1 - x, b, a)
    assert value + mirrored == pytest.approx(1.0, abs=1e-9)


def test_t_quantile_rejects_probabilities_outside_zero_one() -> None:
    with pytest.raises(ValueError):
        t_quantile(1.0, 5)
