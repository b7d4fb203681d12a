"""The compare headline: which changes get a verdict, and why an interval is left out."""

from __future__ import annotations

from runs.stats import (
    IterationProfile,
    IterationRuns,
    RunSample,
    SettingDifference,
    compare_headline,
    compare_iterations,
    no_interval_reason,
    paired_delta,
    setting_differences,
)


def side(label: str, cells: dict[str, tuple[list[float], list[float]]], *, revision=False):
    treatment, control = ("new_skill", "old_skill") if revision else ("with_skill", "without_skill")
    runs = [
        RunSample(eval_id, condition, i, rate)
        for eval_id, arms in cells.items()
        for condition, rates in zip((treatment, control), arms, strict=True)
        for i, rate in enumerate(rates, start=1)
    ]
    return IterationRuns(label, treatment, control, runs)


def headline(before: IterationRuns, after: IterationRuns, modes=("new-skill", "new-skill")):
    profiles = (IterationProfile("#1", mode=modes[0]), IterationProfile("#2", mode=modes[1]))
    result = compare_iterations(before, after)
    return compare_headline(before, after, result, profiles=profiles)


def test_an_interval_needs_two_evals_and_some_spread() -> None:
    one = paired_delta({"a": 1.0}, {"a": 0.5})
    flat = paired_delta({"a": 1.0, "b": 0.5}, {"a": 0.5, "b": 0.0})
    spread = paired_delta({"a": 1.0, "b": 0.5}, {"a": 0.5, "b": 0.25})
    assert no_interval_reason(one, runs_per_eval=3) == "1 eval in both: no interval"
    assert no_interval_reason(flat, runs_per_eval=1) == "1 run per eval: no interval"
    assert no_interval_reason(flat, runs_per_eval=2) == "no spread between evals: no interval"
    assert no_interval_reason(spread, runs_per_eval=1) == ""


def test_identical_single_runs_read_as_no_change_without_an_interval() -> None:
    cells = {"a": ([1.0], [0.5]), "b": ([0.5], [0.5])}
    found = headline(side("#1", cells), side("#2", cells))
    assert found.treatment_change.sentence == (
        "no change: each of 2 evals scored the same in both (1 run per eval: no interval)"
    )
    assert found.treatment_change.delta is not None
    assert found.treatment_change.delta.interval is None
    assert found.delta_change is not None and found.delta_change.no_interval


def test_every_eval_moving_alike_keeps_its_p_but_not_a_zero_width_interval() -> None:
    before = {e: ([0.0, 0.0], [0.0, 0.0]) for e in "abcdef"}
    after = {e: ([1.0, 1.0], [0.0, 0.0]) for e in "abcdef"}
    found = headline(side("#1", before), side("#2", after))
    assert found.delta_change is not None
    assert found.delta_change.sentence == (
        "#2 beats #1 by +1.00 (no spread between evals: no interval; p = 0.031, 6 evals)"
    )


def test_deltas_of_a_new_skill_and_a_revision_are_not_compared() -> None:
    cells = {"a": ([1.0, 0.5], [0.5, 0.0]), "b": ([0.5, 0.5], [0.0, 0.5])}
    later = {"a": ([1.0, 1.0], [0.5, 0.0]), "b": ([0.5, 0.5], [0.0, 0.5])}
    found = headline(side("#1", cells), side("#2", later, revision=True), ("new-skill", "revision"))
    assert found.delta_change is not None and found.delta_change.delta is None
    assert not found.delta_comparable
    assert found.delta_change.sentence.startswith("not comparable: #1 is a new-skill iteration")
    assert "95% CI" in found.treatment_change.sentence  # the treatment score still compares


def test_a_side_without_a_control_has_no_delta_to_compare() -> None:
    cells = {"a": ([1.0, 0.5], [0.5, 0.0]), "b": ([0.5, 0.5], [0.0, 0.5])}
    lone = IterationRuns("#2", "with_skill", None, side("#2", cells).runs)
    found = headline(side("#1", cells), lone)
    assert found.delta_change is not None
    assert found.delta_change.sentence == "not comparable: #2 has no control condition, so no delta"


def test_setting_differences_skip_what_one_side_does_not_know() -> None:
    before = IterationProfile(
        "#1", agent_model="a", judge_model="j", harness=None, mode="new-skill"
    )
    after = IterationProfile("#2", agent_model="b", judge_model="j", harness="h", mode="revision")
    assert setting_differences(before, after) == [
        SettingDifference("agent model", "a", "b"),
        SettingDifference("mode", "new-skill", "revision"),
    ]
    assert str(setting_differences(before, after)[0]) == "agent model a → b"
