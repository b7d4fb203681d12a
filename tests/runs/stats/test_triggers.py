"""Trigger-eval figures, checked against counts done by hand."""

from __future__ import annotations

import math

import pytest

from runs.stats.triggers import (
    NONE,
    QueryOutcome,
    broken_harness,
    compare_descriptions,
    confusion,
    flipped_queries,
    summarise,
)


def q(query: str, should: bool, triggers: int, runs: int = 3, **extra) -> QueryOutcome:
    return QueryOutcome(query, should, triggers=triggers, runs=runs, **extra)


#: Should trigger: 3/3, 2/3, 0/3. Should not: 0/3, 1/3.
SET = [q("a", True, 3), q("b", True, 2), q("c", True, 0), q("d", False, 0), q("e", False, 1)]


def test_the_figures_are_skill_creator_s_counted_over_runs() -> None:
    summary = summarise(SET)
    # TP = 5 of 9 should-trigger runs, FP = 1 of 6 should-not runs, TN = 5, FN = 4.
    assert summary.recall.value == pytest.approx(5 / 9)
    assert summary.false_trigger_rate.value == pytest.approx(1 / 6)
    assert summary.precision.value == pytest.approx(5 / 6)
    assert summary.f1.value == pytest.approx(2 * 5 / (2 * 5 + 1 + 4))
    assert summary.accuracy.value == pytest.approx((5 + 5) / 15)
    # Pass by rate ≥ 0.5 (should) / < 0.5 (should not): a, b, d, e pass; c fails.
    assert (summary.passed, summary.scored, summary.queries) == (4, 5, 5)


def test_the_recall_interval_treats_queries_as_clusters() -> None:
    recall = summarise(SET).recall
    # Rates 1, 2/3, 0 with equal weights: SE = sqrt(3/2 · Σ (p − 5/9)²) / 3.
    rates = [1.0, 2 / 3, 0.0]
    se = math.sqrt(3 / 2 * sum((p - 5 / 9) ** 2 for p in rates)) / 3
    assert recall.se == pytest.approx(se)
    assert recall.n == 3
    assert recall.interval.low == 0.0  # clipped to the rate's bounds


def test_a_threshold_moves_the_verdicts() -> None:
    assert summarise(SET, threshold=0.8).passed == 3  # b (2/3) now misses
    assert q("x", False, 1).passed(0.3) is False


def test_a_rate_without_run_counts_weighs_one_run() -> None:
    outcomes = [QueryOutcome("a", True, rate=1.0), QueryOutcome("b", True, rate=0.0)]
    summary = summarise(outcomes)
    assert summary.recall.value == 0.5
    assert outcomes[0].interval() is None and outcomes[0].passed() is True


def test_errors_are_neither_triggers_nor_misses() -> None:
    outcome = q("a", True, 2, runs=2, errors=1)
    assert outcome.trigger_rate == 1.0
    assert summarise([outcome]).errors == 1


def test_two_descriptions_are_compared_query_by_query() -> None:
    after = [q("a", True, 3), q("b", True, 3), q("c", True, 3), q("d", False, 0), q("e", False, 0)]
    delta = compare_descriptions(SET, after)
    # Correct shares before: 1, 2/3, 0, 1, 2/3; after: all 1.
    assert delta.mean == pytest.approx((0 + 1 / 3 + 1 + 0 + 1 / 3) / 5)
    assert delta.n == 5
    assert 0 < delta.p_value <= 1
    flips = flipped_queries(SET, after)
    assert [(f.query, f.fixed) for f in flips] == [("c", True)]


def test_routing_runs_make_a_confusion_matrix() -> None:
    outcomes = [
        q("a", True, 2, expected="pdf", loaded={"pdf": 2, "docx": 1}),
        q("b", False, 0, loaded={NONE: 3}),
    ]
    assert confusion(outcomes) == {("pdf", "pdf"): 2, ("pdf", "docx"): 1, (NONE, NONE): 3}


def test_a_runner_that_never_triggers_is_named() -> None:
    dead = [q("a", True, 0), q("b", True, 0), q("c", False, 0)]
    assert "no query ever loaded the skill" in broken_harness(dead)
    assert "timed out" in broken_harness([q("a", True, 0, runs=0, errors=3)])
    assert broken_harness(SET) is None
