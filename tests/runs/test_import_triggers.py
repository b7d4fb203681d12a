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


def test_one_judged_run_per_case_is_read_as_results(tmp_path: Path) -> None:
    # {skill_name, description, cases[{query, expected, actual, passed}]}: one run per query.
    skill(tmp_path / "changelog")
    cases = [
        {"query": "release notes", "expected": True, "actual": True, "passed": True},
        {"query": "weather", "expected": False, "actual": True, "passed": False},
    ]
    data = {"skill_name": "changelog", "description": DESCRIPTION, "cases": cases}
    write_json(tmp_path / "changelog" / "evals" / "trigger-results.json", data)
    import_workspace([tmp_path])
    rows = TriggerQuery.objects.values_list("query", "should_trigger", "triggers", "runs")
    assert list(rows) == [("release notes", True, 1, 1), ("weather", False, 1, 1)]


def test_rows_that_say_whether_each_query_triggered_are_results_not_a_set(
    tmp_path: Path,
) -> None:
    skill(tmp_path / "changelog")
    rows = [
        {"query": "a", "should_trigger": True, "triggered": True, "passed": True},
        {"query": "b", "should_trigger": False, "triggered": False, "passed": True},
    ]
    write_json(tmp_path / "changelog" / "evals" / "trigger_eval_results.json", rows)
    import_workspace([tmp_path])
    assert not TriggerSet.objects.exists()
    assert list(TriggerQuery.objects.values_list("triggers", "runs")) == [(1, 1), (0, 1)]


def test_a_set_given_as_should_and_should_not_lists_is_read(tmp_path: Path) -> None:
    skill(tmp_path / "changelog")
    data = {
        "skill_name": "changelog",
        "description_under_test": "see SKILL.md",
        "should_trigger": [{"id": 1, "prompt": "release notes"}],
        "should_not_trigger": [{"id": 2, "prompt": "weather"}, {"id": 3, "prompt": "jokes"}],
    }
    write_json(tmp_path / "changelog" / "evals" / "trigger-evals.json", data)
    import_workspace([tmp_path])
    assert [(q["query"], q["should_trigger"]) for q in TriggerSet.objects.get().queries] == [
        ("release notes", True),
        ("weather", False),
        ("jokes", False),
    ]


def test_routing_sets_and_results_are_named_with_what_they_are(tmp_path: Path) -> None:
    folder = skill(tmp_path / "changelog")
    write_json(folder / "evals" / "trigger-eval.json", SET)
    routing = [{"id": "q1", "expect": "changelog", "query": "notes"}]
    write_json(folder / "evals" / "trigger_queries.json", routing)
    picked = {"results": [{"id": "q1", "expect": "changelog", "got": "none", "ok": False}]}
    write_json(folder / "evals" / "routing_results.json", picked)
    group = {"evals": [{"query": "x", "should_trigger": "changelog"}, {"query": "y"}]}
    write_json(folder / "evals" / "groups" / "people-group.json", group)
    report = import_workspace([tmp_path])
    left_out = " | ".join(report.unimported)
    assert "trigger_queries.json: unrecognised result format (a routing set" in left_out
    assert "routing_results.json: unrecognised result format (routing results" in left_out
    assert "people-group.json: unrecognised result format (a routing set" in left_out


def test_a_set_that_names_no_skill_is_that_of_the_results_beside_it(tmp_path: Path) -> None:
    evals = tmp_path / "repo" / "evals"
    write_json(evals / "eval_queries.json", SET)
    write_json(evals / "trigger-results.json", run_eval(description=None))
    import_workspace([tmp_path / "repo"])
    assert list(Skill.objects.values_list("name", flat=True)) == ["changelog"]
    iteration = TriggerIteration.objects.get()
    assert iteration.trigger_set is not None
    assert [w["code"] for w in iteration.validity_warnings] == ["trigger-description-unknown"]


def runevals_result(folder: Path, transcript: str = "runs/q-1/run-1/conversation.json") -> None:
    """What runevals --triggers writes for one description."""
    records = [
        {"run": 1, "outcome": "loaded", "loaded_skill": "changelog", "transcript": transcript,
         "tool_calls": [{"name": "Skill", "input": {"skill": "changelog"}}], "final_message": "ok",
         "duration_ms": 1200, "total_tokens": 300},
        {"run": 2, "outcome": "other", "loaded_skill": "pdf", "tool_calls": []},
        {"run": 3, "outcome": "timeout", "error": "no final message within 60 s"},
    ]  # fmt: skip
    data = {
        "skill_name": "changelog",
        "description": "Candidate.",
        "results": [
            {"query": "release notes", "should_trigger": True, "trigger_rate": 0.5,
             "triggers": 1, "runs": 2, "pass": True, "split": "test", "expected": "changelog",
             "errors": 1, "loaded": {"changelog": 1, "pdf": 1}, "run_records": records},
        ],
        "summary": {"total": 1, "passed": 1, "failed": 0},
        "evalsite": {"harness": "claude-code", "harness_version": "2.1.0", "model": "m-1",
                     "runs_per_query": 3, "threshold": 0.5, "siblings": ["pdf"],
                     "generated_at": "2026-12-02T04:00:00Z"},
    }  # fmt: skip
    write_json(folder / "trigger-results.json", data)


def test_runevals_trigger_results_keep_every_run(tmp_path: Path) -> None:
    skill(tmp_path / "changelog")
    described = tmp_path / "changelog" / "evals" / "triggers-20261202T040000Z" / "description-1"
    runevals_result(described)
    write_json(described / "runs" / "q-1" / "run-1" / "conversation.json", {"events": [{"a": 1}]})
    import_workspace([tmp_path])
    iteration = TriggerIteration.objects.get()
    assert (iteration.source_format, iteration.harness, iteration.agent_model) == (
        "evalsite",
        "claude-code 2.1.0",
        "m-1",
    )
    assert iteration.siblings == ["pdf"] and iteration.runs_per_query == 3
    assert iteration.generated_at.isoformat() == "2026-12-02T04:00:00+00:00"
    query = iteration.queries.get()
    assert (query.split, query.expected_skill, query.errors) == ("test", "changelog", 1)
    assert query.loaded == {"changelog": 1, "pdf": 1}
    runs = list(query.run_records.values_list("run_index", "outcome", "loaded_skill"))
    assert runs == [(1, "loaded", "changelog"), (2, "other", "pdf"), (3, "timeout", "")]
    assert query.run_records.get(run_index=1).events == [{"a": 1}]


@pytest.mark.parametrize("transcript", ["../../../../secret.json", "/etc/passwd", "link.json"])
def test_a_transcript_path_never_leaves_the_result_folder(tmp_path: Path, transcript: str) -> None:
    skill(tmp_path / "changelog")
    described = tmp_path / "changelog" / "evals" / "triggers" / "description-1"
    runevals_result(described, transcript)
    write_json(tmp_path / "secret.json", {"events": ["secret"]})
    (described / "link.json").symlink_to(tmp_path / "secret.json")
    import_workspace([tmp_path])
    assert TriggerIteration.objects.get().queries.get().run_records.get(run_index=1).events is None
