"""How many evals a delta's permutation test needs: pure functions, no database."""

from __future__ import annotations

import itertools
import math

import pytest

from runs.stats import (
    PairedDelta,
    evals_needed,
    evals_to_reach,
    power_note,
    sign_flip_p_value,
    smallest_p_value,
)


def delta(mean: float, n: int, sd: float | None) -> PairedDelta:
    se = None if sd is None else sd / math.sqrt(n)
    return PairedDelta("with_skill", "without_skill", mean, n, se, None, None)


@pytest.mark.parametrize("n", range(1, 9))
def test_the_smallest_p_is_what_the_exact_sign_flip_test_gives_when_every_eval_agrees(n: int):
    assert sign_flip_p_value([0.5] * n) == pytest.approx(smallest_p_value(n))


def test_five_evals_can_never_reach_p_below_005_and_six_can():
    assert smallest_p_value(5) == pytest.approx(0.0625)
    assert smallest_p_value(6) < 0.05
    assert evals_to_reach(0.05) == 6
    assert evals_to_reach(0.01) == 8


def test_the_evals_needed_grow_with_the_spread_and_shrink_with_the_effect():
    assert evals_needed(0.3, 0.0) == 6  # no spread: the permutation test's own floor
    small, wide = evals_needed(0.3, 0.3), evals_needed(0.3, 0.6)
    assert 6 <= small < wide
    assert evals_needed(0.6, 0.6) < wide
    assert evals_needed(0.0, 0.3) is None
    assert evals_needed(0.001, 1.0) is None  # beyond MAX_EVALS


def test_the_number_given_is_the_first_whose_interval_excludes_zero():
    from runs.stats import t_quantile

    n = evals_needed(0.2, 0.5)
    for m, excludes in ((n - 1, False), (n, True)):
        half = t_quantile(0.975, m - 1) * 0.5 / math.sqrt(m)
        assert (half < 0.2) is excludes


def test_the_note_says_why_and_how_many_evals_are_needed():
    note = power_note(delta(0.47, 5, 0.3))
    assert note.startswith("With 5 evals the permutation test can never reach p < 0.05")
    assert "2/2⁵ = 0.0625" in note
    needed = evals_needed(0.47, 0.3)
    assert note.endswith(f"An effect of +0.47 with this spread needs about {needed} evals.")


def test_no_note_once_there_are_enough_evals_and_a_plain_one_without_an_effect():
    assert power_note(delta(0.1, 6, 0.3)) == ""
    assert power_note(None) == ""
    assert power_note(delta(0.0, 3, 0.0)).endswith("Add evals: at least 6 are needed.")
    assert power_note(delta(0.3, 1, None)).endswith("Add evals: at least 6 are needed.")


def test_itertools_agrees_on_two_to_the_n_relabellings():
    # The exact test enumerates every sign pattern; two of them are the most extreme.
    n = 4
    patterns = list(itertools.product((1, -1), repeat=n))
    extreme = [p for p in patterns if abs(sum(p)) == n]
    assert len(extreme) / len(patterns) == smallest_p_value(n)


def exact_by_convolution(steps: list[int], threshold: int) -> float:
    """Count flips with |signed sum| >= threshold by a plain dictionary convolution."""
    counts = {0: 1}
    for step in steps:
        following: dict[int, int] = {}
        for total, ways in counts.items():
            for signed_step in (step, -step):
                following[total + signed_step] = following.get(total + signed_step, 0) + ways
        counts = following
    return sum(w for total, w in counts.items() if abs(total) >= threshold) / 2 ** len(steps)


@pytest.mark.parametrize("n", [63, 120, 300])
def test_hundreds_of_evals_get_the_exact_p_not_a_monte_carlo_estimate(n: int) -> None:
    # A 300-eval iteration of 10 runs x 6 assertions: differences are multiples of 1/60.
    import random

    rng = random.Random(n)
    steps = [rng.randint(-12, 20) for _ in range(n)]
    differences = [s / 60 for s in steps]
    expected = exact_by_convolution([abs(s) for s in steps], abs(sum(steps)))
    assert sign_flip_p_value(differences) == pytest.approx(expected, rel=1e-12)


def test_the_monte_carlo_p_of_terms_with_no_common_fraction_agrees_with_every_flip() -> None:
    import random

    rng = random.Random(7)
    differences = [math.sqrt(2) * rng.uniform(-0.2, 0.6) / 3 for _ in range(21)]  # p ~ 0.03
    observed = abs(math.fsum(differences)) - 1e-9 * len(differences)
    sums = [differences[0]]
    for term in differences[1:]:
        sums = [s + term for s in sums] + [s - term for s in sums]
    exact = sum(1 for s in sums if abs(s) >= observed) / len(sums)
    p = sign_flip_p_value(differences)
    standard_error = math.sqrt(exact * (1 - exact) / 20_000)
    assert abs(p - exact) < 4 * standard_error + 1e-4


def test_a_clear_effect_over_hundreds_of_evals_gets_the_monte_carlo_answer_without_drawing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import random

    from runs.stats import intervals

    rng = random.Random(1)
    differences = [math.sqrt(2) * rng.uniform(0.05, 0.5) for _ in range(300)]
    monkeypatch.setattr(intervals, "_signed_sums_by_byte", lambda terms: pytest.fail("drew"))
    assert sign_flip_p_value(differences) == 1 / (1 + intervals.MONTE_CARLO_DRAWS)
