"""Iteration vs iteration: per-eval changes, badges after Holm, flips, warnings."""

from __future__ import annotations

import pytest

from runs.stats import (
    AssertionOutcome,
    IterationProfile,
    IterationRuns,
    RunSample,
    compare_iterations,
    comparison_warnings,
    flipped_assertions,
)


def runs_of(condition: str, cells: dict[str, list[float]]) -> list[RunSample]:
    return [
        RunSample(eval_id, condition, i, rate)
        for eval_id, rates in cells.items()
        for i, rate in enumerate(rates, start=1)
    ]


def side(label: str, treatment: dict, control: dict, **kwargs: object) -> IterationRuns:
    runs = runs_of("with_skill", treatment) + runs_of("without_skill", control)
    return IterationRuns(label, "with_skill", "without_skill", runs, **kwargs)  # type: ignore[arg-type]


def test_per_eval_change_is_after_minus_before_with_an_interval_over_runs() -> None:
    before = side("iteration-1", {"a": [0.5, 0.5, 1.0]}, {"a": [0.0, 0.5, 0.5]})
    after = side("iteration-2", {"a": [1.0, 1.0, 0.5]}, {"a": [0.0, 0.0, 0.5]})
    (change,) = compare_iterations(before, after).evals
    assert change.treatment_before == pytest.approx(2 / 3)
    assert change.treatment_after == pytest.approx(5 / 6)
    assert change.treatment_change is not None
    assert change.treatment_change.value == pytest.approx(1 / 6)
    assert change.treatment_change.interval is not None
    assert change.treatment_change.interval.contains(1 / 6)
    assert change.delta_change is not None
    assert change.delta_change.value == pytest.approx((5 / 6 - 1 / 6) - (2 / 3 - 1 / 3))


def test_a_single_run_per_side_gets_no_interval_and_no_badge() -> None:
    before = side("iteration-1", {"a": [1.0]}, {"a": [0.0]})
    after = side("iteration-2", {"a": [0.0]}, {"a": [0.0]})
    (change,) = compare_iterations(before, after).evals
    assert change.treatment_change is not None and change.treatment_change.interval is None
    assert change.p_value == 1.0
    assert change.badge is None


def test_a_clear_regression_gets_a_badge_that_holm_can_take_away() -> None:
    # 6 passes vs 6 failures: exact p = 2 / C(12, 6) = 0.0022.
    alone_before = side("i1", {"a": [1.0] * 6}, {"a": [0.0] * 6})
    alone_after = side("i2", {"a": [0.0] * 6}, {"a": [0.0] * 6})
    (change,) = compare_iterations(alone_before, alone_after).evals
    assert change.p_value == pytest.approx(2 / 924)
    assert change.badge == "regressed"

    # 4 passes vs 4 failures: p = 2 / 70 = 0.029 alone, but Holm over 3 evals makes it 0.086.
    before = side("i1", {"a": [1.0] * 4, "b": [0.5], "c": [0.5]}, {})
    after = side("i2", {"a": [0.0] * 4, "b": [0.5], "c": [0.5]}, {})
    changes = {c.eval_id: c for c in compare_iterations(before, after).evals}
    assert changes["a"].p_value == pytest.approx(2 / 70)
    assert changes["a"].adjusted_p == pytest.approx(3 * 2 / 70)
    assert changes["a"].badge is None


def test_an_improvement_is_badged_improved() -> None:
    before = side("i1", {"a": [0.0] * 6}, {})
    after = side("i2", {"a": [1.0] * 6}, {})
    (change,) = compare_iterations(before, after).evals
    assert change.badge == "improved"


def test_overall_changes_pair_evals_across_iterations() -> None:
    before = side("iteration-1", {"a": [0.5], "b": [0.5], "c": [1.0]}, {"a": [0.0], "b": [0.5]})
    after = side("iteration-2", {"a": [1.0], "b": [0.5], "c": [1.0]}, {"a": [0.0], "b": [0.0]})
    comparison = compare_iterations(before, after)
    assert comparison.treatment_change is not None
    assert comparison.treatment_change.treatment == "iteration-2"
    assert comparison.treatment_change.n == 3
    assert comparison.treatment_change.mean == pytest.approx(0.5 / 3)
    assert comparison.delta_change is not None
    assert comparison.delta_change.n == 2  # c has no control
    assert dict(comparison.delta_change.differences) == pytest.approx({"a": 0.5, "b": 0.5})


def test_sides_are_matched_by_role_across_modes() -> None:
    before = side("new-skill run", {"a": [0.0], "b": [0.0]}, {"a": [0.0], "b": [0.0]})
    after = IterationRuns(
        "revision run",
        "new_skill",
        "old_skill",
        runs_of("new_skill", {"a": [1.0], "b": [1.0]}) + runs_of("old_skill", {"a": [0.0]}),
    )
    comparison = compare_iterations(before, after)
    assert comparison.treatment_change is not None
    assert comparison.treatment_change.mean == 1.0


def outcomes(condition: str, assertion: str, results: list[bool]) -> list[AssertionOutcome]:
    return [AssertionOutcome("e", condition, i, assertion, p) for i, p in enumerate(results)]


def test_flipped_assertions_report_status_changes_by_role() -> None:
    before = IterationRuns(
        "i1",
        "with_skill",
        "without_skill",
        [],
        outcomes("with_skill", "x", [True, True])
        + outcomes("with_skill", "y", [True])
        + outcomes("with_skill", "z", [False, False])
        + outcomes("without_skill", "x", [False]),
    )
    after = IterationRuns(
        "i2",
        "new_skill",
        "old_skill",
        [],
        outcomes("new_skill", "x", [True, False])
        + outcomes("new_skill", "y", [True])
        + outcomes("new_skill", "z", [True])
        + outcomes("old_skill", "x", [False]),
    )
    flips = flipped_assertions(before, after)
    assert [(f.assertion_id, f.role, f.direction) for f in flips] == [
        ("x", "treatment", "broke"),
        ("z", "treatment", "fixed"),
    ]


def test_comparison_warnings_name_what_differs() -> None:
    before = IterationProfile(
        "iteration-4",
        eval_fingerprints={"a": "f1", "b": "f2", "gone": "f3"},
        assertion_ids={"a": {"x", "y"}, "b": {"z"}},
        agent_model="claude-haiku-4-5",
        judge_model="claude-sonnet-4-6",
        harness="claude-code",
    )
    after = IterationProfile(
        "iteration-5",
        eval_fingerprints={"a": "f1", "b": "changed", "new": "f4"},
        assertion_ids={"a": {"x", "w"}, "b": {"z"}},
        agent_model="claude-sonnet-4-6",
        judge_model="claude-sonnet-4-6",
        harness=None,
    )
    assert comparison_warnings(before, after) == [
        "Evals only in iteration-4: gone.",
        "Evals only in iteration-5: new.",
        "Eval definitions changed between iteration-4 and iteration-5: b.",
        "Assertions of a changed: added w; removed y.",
        "Agent model differs: claude-haiku-4-5 in iteration-4, claude-sonnet-4-6 in iteration-5.",
    ]


def test_alike_iterations_raise_no_warning() -> None:
    profile = IterationProfile("i", {"a": "f"}, {"a": {"x"}}, "m", "j", "h", "new-skill")
    assert comparison_warnings(profile, profile) == []
