"""What the trigger pages show, read from imported results and checked by hand-count."""

from __future__ import annotations

from pathlib import Path

import pytest

from runs.importing import import_workspace
from runs.models import Skill, TriggerIteration
from runs.reading.triggers import (
    compare_trigger_iterations,
    description_changes,
    trigger_iteration_page,
    trigger_panel,
)
from tests.factories import trigger_result, write_json

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_descriptions(tmp_path: Path) -> Skill:
    folder = tmp_path / "changelog"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: changelog\ndescription: Old.\n---\n")
    before = [("release notes", True, 1), ("git log summary", True, 0), ("weather", False, 2)]
    after = [("release notes", True, 3), ("git log summary", True, 2), ("weather", False, 0)]
    write_json(
        folder / "evals" / "a-trigger-results.json", trigger_result("Use for changelogs.", before)
    )
    write_json(
        folder / "evals" / "b-trigger-results.json",
        trigger_result("Use for changelogs and release notes from commits.", after),
    )
    import_workspace([tmp_path])
    return Skill.objects.get()


def test_the_panel_has_one_row_per_description_with_its_rates(two_descriptions: Skill) -> None:
    panel = trigger_panel(two_descriptions)
    first, second = panel.rows
    # Before: recall 1 of 6 should-trigger runs, false triggers 2 of 3.
    assert first.summaries.all.recall.value == pytest.approx(1 / 6)
    assert first.summaries.all.false_trigger_rate.value == pytest.approx(2 / 3)
    assert second.summaries.all.recall.value == pytest.approx(5 / 6)
    assert second.summaries.all.false_trigger_rate.value == 0
    assert ("added", "changelogs and release notes from commits.") in second.changes
    assert [p["number"] for p in panel.figure_points] == [1, 2]


def test_the_iteration_page_lists_misses_and_false_triggers_first(two_descriptions: Skill) -> None:
    page = trigger_iteration_page(TriggerIteration.objects.get(number=1))
    # Failing: git log summary (0/3, correct share 0), weather (2/3 false, correct 1/3),
    # release notes (1/3, correct 1/3) — worst first, ties in file order.
    assert [row.query.query for row in page.rows] == [
        "git log summary",
        "release notes",
        "weather",
    ]
    assert [row.passed for row in page.rows] == [False, False, False]
    assert page.previous is None and page.next.number == 2


def test_two_descriptions_are_compared_query_by_query(two_descriptions: Skill) -> None:
    before, after = TriggerIteration.objects.order_by("number")
    comparison = compare_trigger_iterations(before, after)
    # Correct shares before 1/3, 0, 1/3; after 1, 2/3, 1: each +2/3.
    assert comparison.delta.mean == pytest.approx(2 / 3)
    assert comparison.delta.n == 3
    assert "3 queries" in comparison.verdict
    assert {f.query for f in comparison.flips} == {"release notes", "git log summary", "weather"}


def test_description_changes_are_word_runs() -> None:
    assert description_changes("a b c", "a c d") == [
        ("same", "a"),
        ("removed", "b"),
        ("same", "c"),
        ("added", "d"),
    ]
    assert description_changes("same", "same") == []
