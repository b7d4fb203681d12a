"""Plain-language verdicts: who wins, by how much, how sure, with signed numbers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runs.stats import (
    ConditionScore,
    Interval,
    PairedDelta,
    Proportion,
    delta_verdict,
    format_p_value,
    paired_delta,
    rate_sentence,
    score_sentence,
    signed,
    wilson_interval,
)

MINUS = "\u2212"


def delta(mean: float, low: float, high: float, p: float | None, n: int) -> PairedDelta:
    return PairedDelta("with_skill", "without_skill", mean, n, 0.1, Interval(low, high), p)


def test_a_significant_gain_says_the_skill_wins() -> None:
    assert delta_verdict(delta(0.42, 0.18, 0.66, 0.008, 12)) == (
        "with_skill beats without_skill by +0.42 (95% CI +0.18 to +0.66, p = 0.008, 12 evals)"
    )


def test_a_significant_loss_says_the_control_wins_in_its_own_terms() -> None:
    assert delta_verdict(delta(-0.42, -0.66, -0.18, 0.008, 12)) == (
        "without_skill beats with_skill by +0.42 (95% CI +0.18 to +0.66, p = 0.008, 12 evals)"
    )


def test_an_interval_spanning_zero_is_noise() -> None:
    assert delta_verdict(delta(0.08, -0.10, 0.25, 0.31, 5)) == (
        f"difference not distinguishable from noise (+0.08, 95% CI {MINUS}0.10 to +0.25, "
        "p = 0.31, 5 evals)"
    )


def test_fewer_than_two_evals_is_too_little_data() -> None:
    one = paired_delta({"a": 1.0}, {"a": 0.0}, treatment="with_skill", control="without_skill")
    assert delta_verdict(one) == (
        "too little data to compare with_skill with without_skill: 1 eval in both, "
        "at least 2 needed"
    )
    assert delta_verdict(None, treatment="new_skill", control="old_skill").startswith(
        "too little data to compare new_skill with old_skill: 0 evals"
    )


def test_an_interval_clear_of_zero_without_permutation_support_says_so() -> None:
    verdict = delta_verdict(delta(0.3, 0.1, 0.5, 0.0625, 5))
    assert verdict.startswith("with_skill beats without_skill by +0.30")
    assert verdict.endswith("though the permutation test cannot rule out chance")


def test_signed_numbers_use_the_unicode_minus_and_no_sign_on_zero() -> None:
    assert signed(0.421) == "+0.42"
    assert signed(-0.1) == f"{MINUS}0.10"
    assert signed(-0.001) == "0.00"
    assert signed(0.0) == "0.00"


def test_p_values_read_naturally() -> None:
    assert format_p_value(0.0625) == "p = 0.063"
    assert format_p_value(1.0) == "p = 1"
    assert format_p_value(0.0001) == "p < 0.001"


def test_score_and_rate_sentences() -> None:
    score = ConditionScore("with_skill", 0.8333, 3, 3, 0.1, Interval(0.61, 1.0))
    assert score_sentence(score) == "with_skill scores 0.83 (95% CI 0.61 to 1.00, 3 evals)"
    assert score_sentence(None, condition="without_skill") == "without_skill has no graded runs"
    rate = Proportion(9, 10, wilson_interval(9, 10))
    assert rate_sentence(rate) == "9 of 10 runs invoked the skill (90%, 95% CI 60% to 98%)"


@given(
    st.dictionaries(st.sampled_from("abcdef"), st.sampled_from([0.0, 0.5, 1.0]), min_size=2),
    st.dictionaries(st.sampled_from("abcdef"), st.sampled_from([0.0, 0.5, 1.0]), min_size=2),
)
def test_verdicts_never_use_an_ascii_minus_and_agree_when_roles_swap(
    treatment: dict[str, float], control: dict[str, float]
) -> None:
    forward = paired_delta(treatment, control, treatment="T", control="C")
    backward = paired_delta(control, treatment, treatment="C", control="T")
    a, b = delta_verdict(forward), delta_verdict(backward)
    assert "-" not in a
    if " beats " in a:
        assert a == b  # the same winner, the same figures
