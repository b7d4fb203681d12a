"""Flaky assertions and the four classes of the assertion analysis."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runs.stats import (
    AssertionClass,
    AssertionOutcome,
    assertion_classes,
    classify_assertions,
    delta_treatment_minus_control,
    flaky_assertions,
)

from .baselines import load_baseline, real_skill_params


def outcome(
    eval_id: str, condition: str, run: int, assertion: str, passed: bool
) -> AssertionOutcome:
    return AssertionOutcome(eval_id, condition, run, assertion, passed)


def test_an_assertion_is_flaky_when_it_passed_in_some_runs_and_failed_in_others() -> None:
    outcomes = [
        outcome("e", "with_skill", 1, "steady", True),
        outcome("e", "with_skill", 2, "steady", True),
        outcome("e", "with_skill", 1, "shaky", True),
        outcome("e", "with_skill", 2, "shaky", False),
        outcome("e", "without_skill", 1, "shaky", False),
    ]
    flaky = flaky_assertions(outcomes)
    assert [(f.condition, f.assertion_id, f.passed, f.runs) for f in flaky] == [
        ("with_skill", "shaky", 1, 2)
    ]


def test_a_single_run_is_never_flaky() -> None:
    assert flaky_assertions([outcome("e", "with_skill", 1, "x", False)]) == []


def test_the_four_classes_and_the_rest() -> None:
    outcomes = []
    for assertion, t, c in [
        ("both_pass", [True, True], [True]),
        ("both_fail", [False], [False, False]),
        ("skill_helps", [True, True], [False]),
        ("skill_hurts", [False], [True]),
        ("flaky", [True, False], [False]),
    ]:
        outcomes += [outcome("e", "with_skill", i, assertion, p) for i, p in enumerate(t)]
        outcomes += [outcome("e", "without_skill", i, assertion, p) for i, p in enumerate(c)]
    outcomes.append(outcome("e", "with_skill", 1, "new_assertion", True))
    classes = {
        c.assertion_id: c.category
        for c in classify_assertions(outcomes, treatment="with_skill", control="without_skill")
    }
    assert classes == {
        "both_pass": AssertionClass.ALWAYS_PASS,
        "both_fail": AssertionClass.ALWAYS_FAIL,
        "skill_helps": AssertionClass.TREATMENT_ONLY,
        "skill_hurts": AssertionClass.CONTROL_ONLY,
        "flaky": AssertionClass.MIXED,
        "new_assertion": AssertionClass.UNPAIRED,
    }


def test_assertion_classes_lists_every_class_even_when_empty() -> None:
    groups = assertion_classes([], treatment="with_skill", control="without_skill")
    assert set(groups) == set(AssertionClass)
    assert all(v == [] for v in groups.values())


outcomes_strategy = st.lists(
    st.builds(
        AssertionOutcome,
        eval_id=st.sampled_from(["a", "b"]),
        condition=st.sampled_from(["with_skill", "without_skill"]),
        run_index=st.integers(1, 3),
        assertion_id=st.sampled_from(["x", "y", "z"]),
        passed=st.booleans(),
    ),
    max_size=30,
)


@given(outcomes_strategy, st.randoms(use_true_random=False))
def test_reordering_outcomes_changes_no_class(
    outcomes: list[AssertionOutcome], rng: random.Random
) -> None:
    shuffled = list(outcomes)
    rng.shuffle(shuffled)
    kwargs = {"treatment": "with_skill", "control": "without_skill"}
    assert classify_assertions(shuffled, **kwargs) == classify_assertions(outcomes, **kwargs)
    assert flaky_assertions(shuffled) == flaky_assertions(outcomes)


@given(outcomes_strategy)
def test_swapping_roles_swaps_the_one_sided_classes(outcomes: list[AssertionOutcome]) -> None:
    swap = {
        AssertionClass.TREATMENT_ONLY: AssertionClass.CONTROL_ONLY,
        AssertionClass.CONTROL_ONLY: AssertionClass.TREATMENT_ONLY,
    }
    forward = classify_assertions(outcomes, treatment="with_skill", control="without_skill")
    backward = classify_assertions(outcomes, treatment="without_skill", control="with_skill")
    assert [swap.get(c.category, c.category) for c in forward] == [c.category for c in backward]


@pytest.mark.parametrize("skill_dir", real_skill_params())
def test_real_baseline_assertions_fall_into_classes_that_explain_its_delta(
    skill_dir: Path,
) -> None:
    recorded, _, outcomes = load_baseline(skill_dir)
    treatment, control = sorted(
        recorded["conditions_compared"], key=lambda c: c in ("without_skill", "old_skill")
    )
    groups = assertion_classes(outcomes, treatment=treatment, control=control)
    assert groups[AssertionClass.UNPAIRED] == []
    assert flaky_assertions(outcomes) == []  # one run per cell in these baselines
    delta = delta_treatment_minus_control(recorded["delta"])["pass_rate"]
    helps, hurts = groups[AssertionClass.TREATMENT_ONLY], groups[AssertionClass.CONTROL_ONLY]
    if delta > 0:
        assert helps
    elif delta < 0:
        assert hurts
    else:
        assert bool(helps) == bool(hurts)
