"""Importing trigger sets and trigger results (SPEC §3.5), in the shapes skill-creator writes
and the ones authors publish, found wherever they sit (SPEC §3.6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runs.importing import ImportFailure, import_workspace
from runs.models import Skill, TriggerIteration, TriggerQuery, TriggerSet
from tests.factories import write_json

pytestmark = pytest.mark.django_db

DESCRIPTION = "Use when turning commits into a changelog."
SET = [
    {"query": "write release notes from my commits", "should_trigger": True},
    {"query": "summarise git log since v1.2", "should_trigger": True},
    {"query": "what is the weather today", "should_trigger": False},
]


def skill(folder: Path, name: str = "changelog") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {DESCRIPTION}\n---\n\n# {name}\n", encoding="utf-8"
    )
    return folder


def row(query: str, should: bool, triggers: int, runs: int = 3) -> dict[str, Any]:
    rate = triggers / runs
    passed = rate >= 0.5 if should else rate < 0.5
    return {
        "query": query,
        "should_trigger": should,
        "trigger_rate": rate,
        "triggers": triggers,
        "runs": runs,
        "pass": passed,
    }


def run_eval(description: str | None = "Changelogs from commits.", **extra: Any) -> dict:
    results = [
        row(SET[0]["query"], True, 3),
        row(SET[1]["query"], True, 1),
        row(SET[2]["query"], False, 0),
    ]
    data = {"skill_name": "changelog", "results": results, "summary": {"total": 3}, **extra}
    if description is not None:
        data["description"] = description
    return data


def test_a_set_and_a_run_eval_result_in_a_skill_folder_are_imported(tmp_path: Path) -> None:
    folder = skill(tmp_path / "changelog")
    write_json(folder / "evals" / "trigger-eval.json", SET)
    write_json(folder / "evals" / "description-test.json", run_eval())
    report = import_workspace([tmp_path])
    assert report.counts["trigger sets"] == {"created": 1}
    assert report.counts["trigger iterations"] == {"created": 1}
    iteration = TriggerIteration.objects.get()
    assert iteration.skill.name == "changelog"
    assert iteration.description == "Changelogs from commits."
    assert iteration.trigger_set == TriggerSet.objects.get()
    assert iteration.runs_per_query == 3
    counts = list(iteration.queries.values_list("triggers", "runs", "should_trigger"))
    assert counts == [(3, 3, True), (1, 3, True), (0, 3, False)]
    # Running it again adds nothing.
    again = import_workspace([tmp_path])
    assert again.counts["trigger iterations"] == {"skipped": 1}
    assert TriggerIteration.objects.count() == 1


def test_a_result_without_its_description_takes_skill_md_s_and_says_so(tmp_path: Path) -> None:
    folder = skill(tmp_path / "changelog")
    write_json(folder / "trigger_results.json", run_eval(description=None))
    import_workspace([tmp_path])
    iteration = TriggerIteration.objects.get()
    assert iteration.description == DESCRIPTION
    assert not iteration.description_recorded
    assert [w["code"] for w in iteration.validity_warnings] == ["trigger-description-from-skill"]


def test_run_loop_results_become_one_iteration_per_step_with_train_and_test(
    tmp_path: Path,
) -> None:
    skill(tmp_path / "changelog")
    step = {
        "description": "v1",
        "train_results": [row(SET[0]["query"], True, 0), row(SET[2]["query"], False, 0)],
        "test_results": [row(SET[1]["query"], True, 0)],
    }
    better = {
        **step,
        "iteration": 2,
        "description": "v2",
        "train_results": [row(SET[0]["query"], True, 3), row(SET[2]["query"], False, 0)],
    }
    results = {
        "exit_reason": "max_iterations (2)",
        "original_description": "v1",
        "best_description": "v2",
        "holdout": 0.4,
        "history": [{**step, "iteration": 1}, better],
    }
    write_json(tmp_path / "changelog-workspace" / "2026-03-01_101500" / "results.json", results)
    report = import_workspace([tmp_path])
    assert report.counts["trigger iterations"] == {"created": 2}
    first, second = TriggerIteration.objects.order_by("number")
    assert (first.loop_step, first.description, first.is_best) == (1, "v1", False)
    assert (second.loop_step, second.description, second.is_best) == (2, "v2", True)
    assert second.generated_at.isoformat() == "2026-03-01T10:15:00+00:00"
    assert second.provenance["exit_reason"] == "max_iterations (2)"
    splits = list(second.queries.values_list("split", flat=True))
    assert splits == ["train", "train", "test"]
    # Step 1 triggered nothing at all: the broken-runner signature is named.
    assert "trigger-harness-broken" in [w["code"] for w in first.validity_warnings]


def test_a_file_of_several_skills_results_files_each_under_its_skill(tmp_path: Path) -> None:
    skill(tmp_path / "skills" / "changelog")
    skill(tmp_path / "skills" / "pdf", "pdf")
    data = {
        "summary": {"passed": 3},
        "skills": [
            {
                "skill": "changelog",
                "description": DESCRIPTION[:20] + "...",
                "results": [row("a", True, 3)],
            },
            {
                "skill": "pdf",
                "description": "Cut short entirely diff...",
                "results": [row("b", True, 2)],
            },
        ],
    }
    write_json(tmp_path / "trigger-results.json", data)
    import_workspace([tmp_path])
    by_skill = {t.skill.name: t for t in TriggerIteration.objects.select_related("skill")}
    assert set(by_skill) == {"changelog", "pdf"}
    assert by_skill["changelog"].description == DESCRIPTION  # the cut text is SKILL.md's start
    assert by_skill["pdf"].description == "Cut short entirely diff..."
    assert [w["code"] for w in by_skill["pdf"].validity_warnings] == ["trigger-description-cut"]


def test_rates_without_run_counts_are_taken_as_given(tmp_path: Path) -> None:
    skill(tmp_path / "changelog")
    rows = [
        {"query": "q1", "should_trigger": True, "trigger_rate": 0.67, "pass": True},
        {"query": "q1", "should_trigger": True, "trigger_rate": 0.67, "pass": True},
        {"query": "q2", "should_trigger": False, "trigger_rate": 0.0, "pass": True},
    ]
    write_json(tmp_path / "changelog" / "evals" / "trigger-results.json", rows)
    import_workspace([tmp_path])
    iteration = TriggerIteration.objects.get()
    assert list(iteration.queries.values_list("query", "rate", "runs")) == [
        ("q1", 0.67, None),
        ("q2", 0.0, None),
    ]
    codes = [w["code"] for w in iteration.validity_warnings]
    assert codes == [
        "trigger-query-repeated",
        "trigger-description-from-skill",
        "trigger-rates-only",
    ]


def test_the_skill_eval_tool_s_counts_are_read(tmp_path: Path) -> None:
    skill(tmp_path / "changelog")
    data = {
        "skill_name": "changelog",
        "query_results": [
            {
                "query": "a",
                "should_trigger": True,
                "trigger_count": 2,
                "run_count": 5,
                "trigger_rate": 0.4,
                "passed": False,
                "mean_input_tokens": 900,
            },
        ],
        "summary": {"trigger_precision": 0.4},
    }
    write_json(tmp_path / "changelog" / "skill-eval-report.json", data)
    import_workspace([tmp_path])
    query = TriggerQuery.objects.get()
    assert (query.triggers, query.runs, query.recorded_pass) == (2, 5, False)
    assert query.extra == {"mean_input_tokens": 900}


def test_trigger_shapes_evalsite_does_not_read_are_named(tmp_path: Path) -> None:
    folder = skill(tmp_path / "changelog")
    write_json(folder / "evals" / "routing-results.json", [{"id": "q1", "top": "changelog"}])
    write_json(folder / "evals" / "trigger-notes.json", {"note": "todo"})
    write_json(folder / "evals" / "trigger-eval.json", SET)
    report = import_workspace([tmp_path])
    left_out = " | ".join(report.unimported)
    assert "routing-results.json: unrecognised result format (routing results" in left_out
    assert "trigger-notes.json: unrecognised result format (its name says trigger" in left_out


def test_a_malformed_result_names_the_file_and_field_and_writes_nothing(tmp_path: Path) -> None:
    skill(tmp_path / "changelog")
    bad = run_eval()
    bad["results"][1]["triggers"] = 5  # more triggers than runs
    write_json(tmp_path / "changelog" / "trigger-results.json", bad)
    with pytest.raises(ImportFailure, match=r"trigger-results.json.*results/1/triggers"):
        import_workspace([tmp_path])
    assert not Skill.objects.exists() and not TriggerIteration.objects.exists()


def test_an_eval_fixture_is_not_a_trigger_set(tmp_path: Path) -> None:
    folder = skill(tmp_path / "changelog")
    write_json(folder / "evals" / "files" / "trigger-eval.json", SET)
    write_json(folder / "evals" / "trigger-eval.json", SET[:2])
    import_workspace([tmp_path])
    assert [len(s.queries) for s in TriggerSet.objects.all()] == [2]
