"""Importing skill-creator workspaces, with their documented normalisations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runs.importing import ImportFailure, import_workspace
from runs.models import EvalCase, Grading, Iteration, Review, Run
from tests.factories import skill_creator_iteration, write_json

pytestmark = pytest.mark.django_db


def test_it_imports_run_folders_with_expectations_as_results(tmp_path: Path) -> None:
    folder = skill_creator_iteration(tmp_path)

    import_workspace([folder.parent])

    iteration = Iteration.objects.get()
    assert (iteration.skill.name, iteration.source_kind, iteration.mode) == (
        "creator-skill",
        "skill-creator",
        "new-skill",
    )
    assert list(iteration.conditions.values_list("name", "role")) == [
        ("with_skill", "treatment"),
        ("without_skill", "control"),
    ]
    run = Run.objects.get(condition__name="without_skill", run_index=2)
    assert run.eval_id == "0" and run.prompt == "Summarise the report."
    assert list(run.grading.results.values_list("assertion_id", "passed", "text")) == [
        ("mentions-the-total", True, "Mentions the total"),
        ("is-under-100-words", False, "Is under 100 words"),
    ]
    assert run.artifacts["outputs"] == [{"path": "summary.md", "size": 8, "text": "Total: 4"}]
    case = EvalCase.objects.get()
    assert (case.origin, case.name) == ("eval_metadata.json", "summarise")
    assert [a["id"] for a in case.assertions] == ["mentions-the-total", "is-under-100-words"]


def test_a_missing_summary_is_computed_and_marked(tmp_path: Path) -> None:
    folder = skill_creator_iteration(tmp_path, with_summary=False)

    import_workspace([folder])

    grading = Grading.objects.get(run__condition__name="without_skill", run__run_index=1)
    assert (grading.passed, grading.failed, grading.total, grading.pass_rate) == (1, 1, 2, 0.5)
    assert grading.summary_computed is True


def test_zero_tokens_and_zero_time_mean_not_recorded(tmp_path: Path) -> None:
    folder = skill_creator_iteration(tmp_path)
    write_json(
        folder / "eval-0-summarise" / "with_skill" / "run-1" / "timing.json",
        {"total_tokens": 5120, "duration_ms": 0, "total_duration_seconds": 12.5},
    )

    import_workspace([folder])

    recorded = Run.objects.get(condition__name="with_skill", run_index=1)
    # duration_ms 0 beside a recorded total_duration_seconds: the seconds are the measurement.
    assert (recorded.total_tokens, recorded.duration_ms) == (5120, 12500)
    blank = Run.objects.get(condition__name="with_skill", run_index=2)
    assert (blank.total_tokens, blank.duration_ms, blank.timing_source) == (None, None, "")


def test_feedback_json_becomes_review_notes_once(tmp_path: Path) -> None:
    folder = skill_creator_iteration(tmp_path)
    write_json(
        folder / "feedback.json",
        {
            "reviews": [
                {
                    "run_id": "eval-0-summarise-with_skill-run-1",
                    "feedback": "Good, but the total is buried.",
                    "timestamp": "2026-04-02T09:00:00Z",
                },
                {"run_id": "eval-0-summarise-without_skill-run-2", "feedback": ""},
            ],
            "status": "complete",
        },
    )

    import_workspace([folder])
    import_workspace([folder])

    review = Review.objects.get()
    assert (review.source, review.kind, review.text) == (
        "feedback.json",
        "note",
        "Good, but the total is buried.",
    )
    assert (review.run.condition.name, review.run.run_index) == ("with_skill", 1)
    assert Iteration.objects.get().extra["feedback_status"] == "complete"


def test_old_and_new_skill_configurations_mean_revision_mode(tmp_path: Path) -> None:
    folder = skill_creator_iteration(tmp_path)
    eval_dir = folder / "eval-0-summarise"
    (eval_dir / "with_skill").rename(eval_dir / "new_skill")
    (eval_dir / "without_skill").rename(eval_dir / "old_skill")

    import_workspace([folder])

    iteration = Iteration.objects.get()
    assert iteration.mode == "revision"
    assert list(iteration.conditions.values_list("name", "role", "loads_skill")) == [
        ("new_skill", "treatment", True),
        ("old_skill", "control", True),
    ]


def test_a_lone_benchmark_json_is_imported_from_its_runs(tmp_path: Path) -> None:
    folder = tmp_path / "report-skill-workspace" / "iteration-3"
    write_json(
        folder / "benchmark.json",
        {
            "metadata": {
                "skill_name": "report-skill",
                "executor_model": "claude-sonnet-4-6",
                "timestamp": "2026-04-01T12:00:00Z",
                "evals_run": [1],
                "runs_per_configuration": 1,
            },
            "runs": [
                {
                    "eval_id": "1",
                    "eval_name": "totals",
                    "configuration": "with_skill",
                    "run_number": 1,
                    "result": {
                        "pass_rate": 1.0,
                        "passed": 2,
                        "failed": 0,
                        "total": 2,
                        "time_seconds": 30.5,
                        "tokens": 4100,
                    },
                    "expectations": [
                        {"text": "Totals add up", "passed": True, "evidence": "4 + 5 = 9"},
                        {"text": "Cites the source", "passed": True, "evidence": "per report.csv"},
                    ],
                },
                {
                    "eval_id": 1,
                    "configuration": "without_skill",
                    "run_number": 1,
                    "result": {
                        "pass_rate": 0.5,
                        "passed": 1,
                        "failed": 1,
                        "total": 2,
                        "time_seconds": 0,
                        "tokens": 0,
                    },
                    "extra_key_written_by_an_agent": True,
                },
            ],
            "run_summary": {"with_skill": {"pass_rate": {"mean": 1.0}}},
        },
    )

    import_workspace([folder])

    iteration = Iteration.objects.get()
    assert (iteration.skill.name, iteration.agent_model) == ("report-skill", "claude-sonnet-4-6")
    assert iteration.recorded_benchmark["run_summary"]["with_skill"]["pass_rate"]["mean"] == 1.0
    treated = Run.objects.get(condition__name="with_skill")
    assert (treated.total_tokens, treated.duration_ms) == (4100, 30500)
    assert treated.grading.results.count() == 2
    control = Run.objects.get(condition__name="without_skill")
    assert (control.grading.pass_rate, control.total_tokens) == (0.5, None)


def test_an_expectation_without_passed_is_rejected(tmp_path: Path) -> None:
    folder = skill_creator_iteration(tmp_path)
    path = folder / "eval-0-summarise" / "with_skill" / "run-1" / "grading.json"
    data = json.loads(path.read_text())
    del data["expectations"][1]["passed"]
    write_json(path, data)

    with pytest.raises(ImportFailure) as info:
        import_workspace([folder])

    assert str(info.value) == (
        f"{path} at /expectations/1/passed: missing required key 'passed' "
        "(schema skill-creator-grading.schema.json)"
    )
    assert Iteration.objects.count() == 0


def test_an_expected_output_in_eval_metadata_is_shown(tmp_path: Path) -> None:
    """skill-creator copies none there, but a hand-edited eval_metadata.json may carry it."""
    folder = skill_creator_iteration(tmp_path)
    metadata = folder / "eval-0-summarise" / "eval_metadata.json"
    data = json.loads(metadata.read_text())
    write_json(metadata, {**data, "expected_output": "A one-line total."})

    import_workspace([folder.parent])

    assert EvalCase.objects.get().expected_output == "A one-line total."
