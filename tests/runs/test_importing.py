"""Importing eval-magic iterations and workspaces: what lands in the database, and re-imports."""

from __future__ import annotations

from pathlib import Path

import pytest

from runs.importing import import_workspace
from runs.models import AssertionResult, Condition, EvalCase, Grading, Iteration, Run, Skill
from tests.factories import eval_magic_iteration, skill_folder, write_json

pytestmark = pytest.mark.django_db


def test_it_imports_an_iteration_with_its_conditions_runs_and_gradings(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)

    report = import_workspace([folder])

    iteration = Iteration.objects.get()
    assert (iteration.skill.name, iteration.number, iteration.label) == (
        "demo-skill",
        1,
        "iteration-1",
    )
    assert iteration.mode == "new-skill"
    assert iteration.agent_model == "claude-haiku-4-5"
    assert iteration.generated_at.isoformat() == "2026-05-01T10:00:00+00:00"
    assert [(c.name, c.role, c.loads_skill) for c in iteration.conditions.all()] == [
        ("with_skill", "treatment", True),
        ("without_skill", "control", False),
    ]
    run = Run.objects.get(condition__name="without_skill")
    assert (run.eval_id, run.run_index, run.status) == ("alpha", 1, "completed")
    assert run.total_tokens == 1001 and run.timing_source == "completion-event"
    assert [e["type"] for e in run.conversation] == [
        "user_message",
        "tool_invocation",
        "assistant_message",
    ]
    assert (run.grading.passed, run.grading.total, run.grading.pass_rate) == (1, 2, 0.5)
    treated = Grading.objects.get(run__condition__name="with_skill")
    assert treated.skill_invoked is True
    assert treated.results.filter(is_meta=True).get().assertion_id == "__skill_invoked"
    assert report.counts["runs"]["created"] == 2


def test_importing_the_same_folder_again_skips_everything(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)
    import_workspace([folder])

    report = import_workspace([folder])

    assert report.counts["iterations"] == {"skipped": 1}
    assert report.counts["runs"] == {"skipped": 2}
    assert Run.objects.count() == 2 and Iteration.objects.count() == 1


def test_a_changed_run_is_updated_and_reported(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)
    import_workspace([folder])
    from tests.factories import grading

    write_json(
        folder / "eval-alpha" / "without_skill" / "grading.json",
        grading({"a1": True, "a2": True}),
    )

    report = import_workspace([folder])

    assert report.counts["iterations"]["updated"] == 1
    assert report.counts["runs"] == {"updated": 1, "skipped": 1}
    assert Grading.objects.get(run__condition__name="without_skill").pass_rate == 1.0
    assert AssertionResult.objects.count() == 5  # 2 + 2 substantive, 1 meta


def test_it_reads_multi_run_cells_and_mixed_layouts(tmp_path: Path) -> None:
    folder = eval_magic_iteration(
        tmp_path,
        cells={
            ("alpha", "with_skill"): [{"a1": True}, {"a1": False}, {"a1": True}],
            ("alpha", "without_skill"): [{"a1": False}],
        },
    )

    import_workspace([folder])

    assert sorted(Run.objects.values_list("condition__name", "run_index")) == [
        ("with_skill", 1),
        ("with_skill", 2),
        ("with_skill", 3),
        ("without_skill", 1),
    ]
    assert Run.objects.get(condition__name="with_skill", run_index=2).source_relpath == (
        "eval-alpha/with_skill/run-2"
    )


def test_a_run_without_grading_is_recorded_as_missing_grading(tmp_path: Path) -> None:
    folder = eval_magic_iteration(
        tmp_path,
        cells={
            ("alpha", "with_skill"): [{"a1": True}, None],
            ("alpha", "without_skill"): [{"a1": False}],
        },
    )

    import_workspace([folder])

    iteration = Iteration.objects.get()
    assert iteration.missing_gradings == 1
    assert Run.objects.count() == 3
    assert Run.objects.filter(grading__isnull=True).get().run_index == 2


def test_a_workspace_root_imports_every_skill_and_numbers_iterations_by_time(
    tmp_path: Path,
) -> None:
    eval_magic_iteration(
        tmp_path, skill="one", label="iteration-2", timestamp="2026-05-02T00:00:00Z"
    )
    eval_magic_iteration(
        tmp_path, skill="one", label="iteration-1", timestamp="2026-05-01T00:00:00Z"
    )
    eval_magic_iteration(tmp_path, skill="two", label="iteration-1")
    (tmp_path / "one" / "env-alpha-with_skill").mkdir()  # agent working folder: not results

    report = import_workspace([tmp_path])

    assert sorted(Skill.objects.values_list("name", flat=True)) == ["one", "two"]
    assert list(Iteration.objects.filter(skill__name="one").values_list("number", "label")) == [
        (1, "iteration-1"),
        (2, "iteration-2"),
    ]
    assert report.counts["iterations"]["created"] == 3


def test_an_older_iteration_imported_later_keeps_every_number_and_is_shown_first(
    tmp_path: Path,
) -> None:
    new = eval_magic_iteration(
        tmp_path / "a", label="iteration-9", timestamp="2026-06-01T00:00:00Z"
    )
    old = eval_magic_iteration(
        tmp_path / "b", label="iteration-1", timestamp="2026-01-01T00:00:00Z"
    )
    import_workspace([new])

    import_workspace([old])

    assert list(Iteration.objects.values_list("label", "number", "position")) == [
        ("iteration-1", 2, 1),
        ("iteration-9", 1, 2),
    ]


def test_two_workspaces_with_the_same_iteration_label_are_two_iterations(tmp_path: Path) -> None:
    eval_magic_iteration(tmp_path / "a", timestamp="2026-05-01T00:00:00Z")
    eval_magic_iteration(tmp_path / "b", timestamp="2026-05-08T00:00:00Z")

    import_workspace([tmp_path / "a", tmp_path / "b"])

    assert list(Iteration.objects.values_list("label", "number")) == [
        ("iteration-1", 1),
        ("iteration-1", 2),
    ]


def test_a_skill_folder_supplies_the_definitions_the_iterations_ran(tmp_path: Path) -> None:
    skill_folder(tmp_path / "skills", name="demo-skill")
    eval_magic_iteration(tmp_path / "ws")

    import_workspace([tmp_path])

    case = EvalCase.objects.get()
    assert case.origin == "evals.json" and case.expected_output == "The task is done."
    assert Skill.objects.get().description == "Use when testing evalsite."
    assert set(Run.objects.values_list("eval_case", flat=True)) == {case.pk}


def test_a_definition_that_no_longer_matches_what_ran_is_rebuilt_from_the_results(
    tmp_path: Path,
) -> None:
    skill_folder(tmp_path / "skills", name="demo-skill")
    eval_magic_iteration(
        tmp_path / "ws",
        cells={("alpha", "with_skill"): [{"old-check": True}], ("alpha", "without_skill"): [{}]},
    )

    import_workspace([tmp_path])

    rebuilt = EvalCase.objects.get(origin="results")
    assert rebuilt.assertions == [{"id": "old-check"}]
    assert rebuilt.fingerprint != EvalCase.objects.get(origin="evals.json").fingerprint


def test_revision_mode_orders_conditions_as_eval_magic_and_assigns_roles(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path, mode="revision")

    import_workspace([folder])

    assert list(Condition.objects.values_list("name", "role", "loads_skill")) == [
        ("old_skill", "control", True),
        ("new_skill", "treatment", True),
    ]
    assert Iteration.objects.get().mode == "revision"


def test_findings_and_recorded_benchmark_are_kept(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)
    write_json(
        folder / "stray-writes.json",
        {
            "generated": "2026-05-01T10:05:00Z",
            "iteration": 1,
            "totals": {"violations": 1, "warnings": 0, "live_source_reads": 0},
            "runs": [
                {
                    "eval_id": "alpha",
                    "condition": "with_skill",
                    "violations": [
                        {"tool": "Write", "ordinal": 3, "reason": "outside", "path": "/x"}
                    ],
                    "warnings": [],
                    "live_source_reads": [],
                }
            ],
        },
    )

    import_workspace([folder])

    assert Iteration.objects.get().findings["stray-writes"]["totals"]["violations"] == 1


def test_dry_run_reports_but_saves_nothing(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)

    report = import_workspace([folder], dry_run=True)

    assert report.counts["runs"]["created"] == 2
    assert report.summary().startswith("Dry run, nothing saved: ")
    assert Run.objects.count() == 0 and Skill.objects.count() == 0
