"""Real-world trees: skill collections, workspaces beside their skills, older and looser
layouts. Built the way eval-magic's and skill-creator's documentation describe them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from runs.importing import ImportFailure, import_workspace
from runs.models import EvalCase, Iteration, Run, Skill
from runs.warnings import messages
from tests.factories import eval_magic_iteration, grading, skill_folder, write_json

pytestmark = pytest.mark.django_db


def creator_iteration(
    folder: Path,
    *,
    evals: dict[str, dict[str, Any]] | None = None,
    runs: int = 2,
    benchmark: dict[str, Any] | None = None,
) -> Path:
    """A skill-creator iteration: eval folders named as the agent chose, run-<k> folders.

    `evals` maps the eval folder's name to its eval_metadata.json (None: no metadata).
    """
    evals = evals or {
        "eval-0": {
            "eval_id": 0,
            "eval_name": "summarise",
            "prompt": "Summarise.",
            "assertions": ["Mentions the total"],
        },
    }
    for eval_dir, metadata in evals.items():
        if metadata is not None:
            write_json(folder / eval_dir / "eval_metadata.json", metadata)
        for config, passed in (("with_skill", True), ("without_skill", False)):
            for k in range(1, runs + 1):
                write_json(
                    folder / eval_dir / config / f"run-{k}" / "grading.json",
                    {"expectations": [{"text": "Mentions the total", "passed": passed}]},
                )
    if benchmark is not None:
        write_json(folder / "benchmark.json", benchmark)
    return folder


def skill_md(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    return folder


# --- One identity per skill ---------------------------------------------------------------


def test_a_workspace_beside_its_skill_folder_is_filed_under_the_skill_md_name(
    tmp_path: Path,
) -> None:
    skills = tmp_path / "skills"
    skill_md(skills / "pdf", "---\nname: pdf-tools\ndescription: Fill PDF forms.\n---\n")
    creator_iteration(skills / "pdf-workspace" / "iteration-1")
    creator_iteration(skills / "pdf-workspace" / "iteration-2")
    skill_md(skills / "docx", "---\nname: docx\ndescription: Word files.\n---\n")
    creator_iteration(skills / "docx-workspace" / "iteration-1")

    import_workspace([skills])

    assert sorted(Skill.objects.values_list("name", flat=True)) == ["docx", "pdf-tools"]
    assert Iteration.objects.filter(skill__name="pdf-tools").count() == 2
    assert Skill.objects.get(name="pdf-tools").description == "Fill PDF forms."


def test_a_baseline_in_a_folder_named_otherwise_makes_one_skill(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path, name="checkout-folder")
    (folder / "SKILL.md").write_text("---\nname: real-name\ndescription: d\n---\n")
    baseline = folder / "evals" / "baseline"
    write_json(baseline / "grading" / "alpha__with_skill.json", grading({"a1": True, "a2": True}))
    write_json(
        baseline / "grading" / "alpha__without_skill.json", grading({"a1": False, "a2": True})
    )

    import_workspace([tmp_path])

    assert list(Skill.objects.values_list("name", flat=True)) == ["real-name"]
    iteration = Iteration.objects.get()
    assert iteration.skill.name == "real-name" and iteration.runs.count() == 2
    # Linked to the evals.json beside it, not rebuilt from the results.
    assert set(Run.objects.values_list("eval_case__origin", flat=True)) == {"evals.json"}


def test_evals_json_skill_name_names_the_skill_when_skill_md_has_none(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path, name="folder")
    (folder / "SKILL.md").unlink()
    evals = (folder / "evals" / "evals.json").read_text().replace('"folder"', '"from-evals"')
    (folder / "evals" / "evals.json").write_text(evals)
    creator_iteration(tmp_path / "folder-workspace" / "iteration-1")

    import_workspace([tmp_path])

    assert list(Skill.objects.values_list("name", flat=True)) == ["from-evals"]


def test_benchmark_metadata_names_the_skill_unless_it_is_a_placeholder(tmp_path: Path) -> None:
    meta = {"skill_name": "named-in-benchmark", "executor_model": "claude-x", "timestamp": ""}
    creator_iteration(tmp_path / "a-workspace" / "iteration-1", benchmark={"metadata": meta})
    placeholder = {"skill_name": "<skill-name>", "executor_model": "<model-name>"}
    creator_iteration(tmp_path / "b-workspace" / "iteration-1", benchmark={"metadata": placeholder})

    import_workspace([tmp_path])

    assert sorted(Skill.objects.values_list("name", flat=True)) == ["b", "named-in-benchmark"]
    assert Iteration.objects.get(skill__name="b").agent_model == ""
    assert Iteration.objects.get(skill__name="named-in-benchmark").agent_model == "claude-x"


def test_each_copy_of_a_skill_links_its_runs_to_its_own_evals_json(tmp_path: Path) -> None:
    for copy, prompt, stamp in (
        ("copy-a", "Old prompt.", "2026-05-01T10:00:00Z"),
        ("copy-b", "New prompt.", "2026-06-01T10:00:00Z"),
    ):
        folder = skill_folder(tmp_path / copy, name="demo-skill")
        text = (folder / "evals" / "evals.json").read_text().replace("Do the task.", prompt)
        (folder / "evals" / "evals.json").write_text(text)
        iteration = eval_magic_iteration(folder.parent, skill="demo-skill", timestamp=stamp)
        for run_json in iteration.rglob("run.json"):
            run_json.write_text(run_json.read_text().replace("Do the task.", prompt))

    import_workspace([tmp_path])

    assert Skill.objects.count() == 1
    first, second = Iteration.objects.order_by("number")
    assert {r.eval_case.prompt for r in first.runs.all()} == {"Old prompt."}
    assert {r.eval_case.prompt for r in second.runs.all()} == {"New prompt."}
    assert EvalCase.objects.filter(origin="evals.json").count() == 2


def test_identical_content_under_another_skill_is_imported_for_it(tmp_path: Path) -> None:
    eval_magic_iteration(tmp_path / "one", skill="first")
    eval_magic_iteration(tmp_path / "two", skill="second")

    import_workspace([tmp_path / "one"])
    report = import_workspace([tmp_path / "two"])

    assert report.counts["iterations"]["created"] == 1
    assert Iteration.objects.filter(skill__name="second").count() == 1


# --- Find everything -------------------------------------------------------------------------


def test_detection_descends_into_hidden_skill_folders_and_the_legacy_workspace(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    skill_md(repo / ".claude" / "skills" / "lint", "---\nname: lint\ndescription: d\n---\n")
    creator_iteration(repo / ".claude" / "skills" / "lint-workspace" / "iteration-1")
    eval_magic_iteration(repo / ".eval-magic", skill="legacy-skill")

    import_workspace([repo])

    assert sorted(Skill.objects.values_list("name", flat=True)) == ["legacy-skill", "lint"]
    assert Iteration.objects.count() == 2


def test_iterations_inside_a_skill_folder_are_found(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path, name="demo-skill")
    eval_magic_iteration(folder.parent, skill="demo-skill")  # demo-skill/iteration-1/

    import_workspace([folder])

    assert Iteration.objects.get().skill.name == "demo-skill"


def test_a_skill_snapshot_is_not_a_skill(tmp_path: Path) -> None:
    workspace = tmp_path / "pdf-workspace"
    skill_md(workspace / "skill-snapshot", "---\nname: pdf-old\ndescription: d\n---\n")
    creator_iteration(workspace / "iteration-1")

    import_workspace([workspace])

    assert list(Skill.objects.values_list("name", flat=True)) == ["pdf"]


def test_the_older_runs_layout_and_descriptive_eval_folders_are_iterations(
    tmp_path: Path,
) -> None:
    older = tmp_path / "old-workspace" / "iteration-1" / "runs"
    creator_iteration(older, evals={"eval-0": None, "eval-1": None})
    descriptive = tmp_path / "new-workspace" / "iteration-1"
    creator_iteration(
        descriptive,
        evals={
            "fill-a-tax-form": {"eval_id": 7, "eval_name": "tax form", "prompt": "Fill it."},
            "merge-two-pdfs": None,
        },
    )

    import_workspace([tmp_path])

    old = Run.objects.filter(iteration__skill__name="old")
    assert sorted(set(old.values_list("eval_id", flat=True))) == ["0", "1"]
    new = Run.objects.filter(iteration__skill__name="new")
    assert sorted(set(new.values_list("eval_id", flat=True))) == ["7", "merge-two-pdfs"]
    assert EvalCase.objects.get(skill__name="new", eval_id="7").name == "tax form"


def test_feedback_names_runs_of_the_older_layout_without_the_runs_folder(
    tmp_path: Path,
) -> None:
    iteration = tmp_path / "old-workspace" / "iteration-1"
    creator_iteration(iteration / "runs", evals={"eval-0": None})
    write_json(
        iteration / "feedback.json",
        {"reviews": [{"run_id": "eval-0-with_skill-run-1", "feedback": "Good."}]},
    )

    report = import_workspace([iteration.parent])

    assert report.counts["reviews"]["created"] == 1


def test_folders_with_results_that_are_not_imported_are_named(tmp_path: Path) -> None:
    eval_magic_iteration(tmp_path / "ws")
    write_json(tmp_path / "notes" / "scratch" / "grading.json", {"whatever": 1})
    skill = skill_folder(tmp_path, name="lonely")
    write_json(skill / "evals" / "fixtures" / "grading.json", grading({"a": True}))

    report = import_workspace([tmp_path])

    assert report.counts["iterations"]["created"] == 1
    assert report.unimported == [
        f"{tmp_path}/lonely/evals/fixtures: inside a skill's evals/ folder but in no "
        "iteration (expected <iteration>/<eval>/<configuration>/[run-<k>/]grading.json); "
        "not read",
        f"{tmp_path}/notes/scratch: a grading.json that is not a grading (no expectations "
        "or assertion_results) in no eval or iteration evalsite can place; not read",
    ]
    assert "2 folder(s) or file(s) with results not imported" in report.summary()


def test_a_tree_with_results_but_nothing_importable_is_an_error(tmp_path: Path) -> None:
    write_json(tmp_path / "results" / "x" / "benchmark.json", {"conditions_compared": []})

    with pytest.raises(ImportFailure) as info:
        import_workspace([tmp_path])

    assert str(info.value) == (
        f"nothing imported: {tmp_path}/results/x/benchmark.json: an eval-magic benchmark.json "
        "without the conditions.json beside it (expected an eval-magic iteration); not read"
    )
    assert Iteration.objects.count() == 0


def test_the_command_lists_folders_it_did_not_import(tmp_path: Path, capsys) -> None:
    eval_magic_iteration(tmp_path / "ws")
    write_json(tmp_path / "stray" / "grading.json", {})

    call_command("importworkspace", str(tmp_path))

    out = capsys.readouterr().out
    assert f"  not imported: {tmp_path}/stray: a grading.json that is not a grading" in out


# --- As lenient as the writing tools -------------------------------------------------------


def test_run_folders_win_over_a_flat_grading_beside_them(tmp_path: Path) -> None:
    folder = creator_iteration(tmp_path / "s-workspace" / "iteration-1")
    write_json(folder / "eval-0" / "with_skill" / "grading.json", {"expectations": []})

    import_workspace([folder])

    iteration = Iteration.objects.get()
    assert iteration.runs.filter(condition__name="with_skill").count() == 2
    assert any(
        "holds run-<k> folders and a flat grading.json" in w
        for w in messages(iteration.validity_warnings)
    )


def test_an_undeclared_condition_folder_is_ignored_with_a_warning(tmp_path: Path) -> None:
    folder = eval_magic_iteration(
        tmp_path / "ws",
        cells={
            ("alpha", "with_skill"): [{"a": True}],
            ("alpha", "without_skill"): [{"a": True}],
            ("alpha", "with_skil"): [{"a": True}],
        },
    )

    import_workspace([folder])

    iteration = Iteration.objects.get()
    assert iteration.runs.count() == 2
    assert any("'with_skil'" in w and "ignored" in w for w in messages(iteration.validity_warnings))


def test_a_declared_condition_without_runs_is_named(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path / "ws", cells={("alpha", "with_skill"): [{"a": True}]})

    import_workspace([folder])

    warnings = messages(Iteration.objects.get().validity_warnings)
    assert "condition 'without_skill' of conditions.json has no runs" in warnings


def test_run_zero_is_a_run(tmp_path: Path) -> None:
    folder = creator_iteration(tmp_path / "s-workspace" / "iteration-1", runs=1)
    (folder / "eval-0" / "with_skill" / "run-1").rename(folder / "eval-0" / "with_skill" / "run-0")

    import_workspace([folder])

    assert Run.objects.filter(condition__name="with_skill").get().run_index == 0


def test_an_empty_or_outputs_only_run_slot_is_a_missing_grading(tmp_path: Path) -> None:
    folder = creator_iteration(tmp_path / "s-workspace" / "iteration-1")
    (folder / "eval-0" / "with_skill" / "run-3").mkdir()
    outputs = folder / "eval-0" / "without_skill" / "run-3" / "outputs"
    outputs.mkdir(parents=True)
    (outputs / "answer.md").write_text("partial")

    import_workspace([folder])

    iteration = Iteration.objects.get()
    assert iteration.missing_gradings == 2
    assert iteration.runs.filter(run_index=3, grading__isnull=True).count() == 2


def test_expectations_with_their_own_eval_id_are_split_into_their_evals(tmp_path: Path) -> None:
    folder = tmp_path / "s-workspace" / "iteration-1"
    for config in ("with_skill", "without_skill"):
        write_json(
            folder / "eval-all" / config / "grading.json",
            {
                "expectations": [
                    {"eval_id": 1, "text": "Has a title", "passed": True},
                    {"eval_id": 1, "text": "Has a date", "passed": config == "with_skill"},
                    {"eval_id": 2, "text": "Is short", "passed": False},
                ]
            },
        )

    import_workspace([folder])

    runs = Run.objects.filter(condition__name="with_skill").order_by("eval_id")
    assert [(r.eval_id, r.grading.total, r.grading.passed) for r in runs] == [
        ("1", 2, 2),
        ("2", 1, 0),
    ]


def test_name_description_assertions_share_ids_with_their_results(tmp_path: Path) -> None:
    metadata = {
        "eval_id": 0,
        "prompt": "Summarise.",
        "assertions": [{"name": "Mentions the total", "description": "The total is stated."}],
    }
    folder = creator_iteration(tmp_path / "s-workspace" / "iteration-1", evals={"eval-0": metadata})

    import_workspace([folder])

    case = EvalCase.objects.get()
    run = Run.objects.filter(condition__name="with_skill").first()
    assert [a["id"] for a in case.assertions] == [r.assertion_id for r in run.grading.results.all()]


def test_typed_assertions_without_ids_get_stable_ones(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path, name="typed")
    write_json(
        folder / "evals" / "evals.json",
        {
            "skill_name": "typed",
            "evals": [
                {
                    "id": 1,
                    "prompt": "p",
                    "assertions": [
                        {"type": "llm_judge", "description": "Answers politely"},
                        {"type": "transcript_check", "pattern": "Read"},
                    ],
                }
            ],
        },
    )

    import_workspace([folder])
    import_workspace([folder])

    assert [a["id"] for a in EvalCase.objects.get().assertions] == [
        "answers-politely",
        "transcript-check-2",
    ]


def test_an_invalid_or_bare_evals_json_found_beside_results_is_only_a_hint(
    tmp_path: Path,
) -> None:
    bare = skill_folder(tmp_path / "a", name="bare")
    write_json(
        bare / "evals" / "evals.json",
        {"skill_name": "bare", "evals": [{"id": 0, "prompt": "", "expectations": ["x"]}]},
    )
    broken = skill_folder(tmp_path / "b", name="broken")
    (broken / "evals" / "evals.json").write_text('{"evals": 7}')
    creator_iteration(tmp_path / "b" / "broken-workspace" / "iteration-1")

    report = import_workspace([tmp_path])

    assert EvalCase.objects.get(skill__name="bare").prompt == ""
    assert Iteration.objects.get().skill.name == "broken"
    assert any(
        "broken/evals/evals.json" in note and "not used to link evals" in note
        for note in report.notes
    )


def test_an_invalid_evals_json_of_the_folder_pointed_at_is_rejected(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path, name="broken")
    (folder / "evals" / "evals.json").write_text('{"evals": 7}')

    with pytest.raises(ImportFailure):
        import_workspace([folder])


def test_zero_tokens_with_a_recorded_time_mean_tokens_not_recorded(tmp_path: Path) -> None:
    folder = creator_iteration(tmp_path / "s-workspace" / "iteration-1", runs=1)
    write_json(
        folder / "eval-0" / "with_skill" / "run-1" / "timing.json",
        {"total_tokens": 0, "duration_ms": 4200},
    )

    import_workspace([folder])

    run = Run.objects.get(condition__name="with_skill")
    assert (run.total_tokens, run.duration_ms) == (None, 4200)


def test_arms_graded_on_different_assertions_are_named(tmp_path: Path) -> None:
    folder = eval_magic_iteration(
        tmp_path / "ws",
        cells={
            ("alpha", "with_skill"): [{"a": True, "b": True}],
            ("alpha", "without_skill"): [{"a": True}],
        },
    )

    import_workspace([folder])

    assert (
        "alpha: the conditions were graded on different assertions "
        "(with_skill: a, b; without_skill: a)"
    ) in messages(Iteration.objects.get().validity_warnings)


def test_a_skill_creator_delta_in_alphabetical_order_is_named_not_copied(tmp_path: Path) -> None:
    folder = tmp_path / "s-workspace" / "iteration-1"
    for config, passed in (("old_skill", False), ("with_skill", True)):
        write_json(
            folder / "eval-0" / config / "grading.json",
            {"expectations": [{"text": "Works", "passed": passed}]},
        )
    write_json(
        folder / "benchmark.json",
        {
            "metadata": {"skill_name": "s"},
            "run_summary": {
                "old_skill": {"pass_rate": {"mean": 0.0}},
                "with_skill": {"pass_rate": {"mean": 1.0}},
                "delta": {"pass_rate": "-1.00"},
            },
        },
    )

    import_workspace([folder])

    warnings = messages(Iteration.objects.get().validity_warnings)
    assert (
        "recorded benchmark.json's delta -1.00 is old_skill - with_skill (skill-creator "
        "subtracts in alphabetical order); evalsite shows treatment - control: "
        "with_skill - old_skill = +1.00"
    ) in warnings


def test_a_skill_creator_benchmark_mean_that_disagrees_is_named(tmp_path: Path) -> None:
    bench = {"run_summary": {"with_skill": {"pass_rate": {"mean": 0.5}}}}
    folder = creator_iteration(tmp_path / "s-workspace" / "iteration-1", benchmark=bench)

    import_workspace([folder])

    assert (
        "recorded benchmark.json gives with_skill a mean pass rate of 0.500; its runs give 1.000"
    ) in messages(Iteration.objects.get().validity_warnings)


def test_duplicate_eval_ids_with_different_prompts_are_distinct_evals(tmp_path: Path) -> None:
    folder = creator_iteration(
        tmp_path / "s-workspace" / "iteration-1",
        evals={"first": {"eval_id": 3, "prompt": "a"}, "second": {"eval_id": 3, "prompt": "b"}},
    )

    import_workspace([folder])

    assert sorted(set(Run.objects.values_list("eval_id", flat=True))) == ["3", "3@second"]
    assert (
        "eval id '3' is used by first/ and second/ for different evals: imported as distinct "
        "evals 3, 3@second"
    ) in messages(Iteration.objects.get().validity_warnings)


# --- --keep-going ------------------------------------------------------------------------------


def _good_and_bad(tmp_path: Path) -> tuple[Path, Path]:
    good = eval_magic_iteration(tmp_path / "ws", skill="good")
    bad = eval_magic_iteration(tmp_path / "ws", skill="bad")
    (bad / "eval-alpha" / "with_skill" / "grading.json").write_text("{")
    return good, bad


def test_without_keep_going_one_bad_iteration_rejects_the_import(tmp_path: Path) -> None:
    _good_and_bad(tmp_path)

    with pytest.raises(CommandError):
        call_command("importworkspace", str(tmp_path / "ws"))

    assert Iteration.objects.count() == 0 and Skill.objects.count() == 0


def test_keep_going_imports_the_valid_iterations_and_lists_the_rejected(
    tmp_path: Path, capsys
) -> None:
    _, bad = _good_and_bad(tmp_path)

    with pytest.raises(CommandError) as info:
        call_command("importworkspace", str(tmp_path / "ws"), "--keep-going")

    assert list(Skill.objects.values_list("name", flat=True)) == ["good"]
    assert Iteration.objects.get().runs.count() == 2
    line = f"{bad}/eval-alpha/with_skill/grading.json: invalid JSON: "
    assert str(info.value).startswith(f"1 rejected: {line}")
    out = capsys.readouterr().out
    assert "Imported skills: 1 created" in out and f"  rejected: {line}" in out


def test_keep_going_with_dry_run_saves_nothing(tmp_path: Path) -> None:
    _good_and_bad(tmp_path)

    report = import_workspace([tmp_path / "ws"], keep_going=True, dry_run=True)

    assert report.counts["iterations"]["created"] == 1 and len(report.rejected) == 1
    assert Iteration.objects.count() == 0


# --- Names at the boundary ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("front_matter_name", "reason"),
    [
        ("team/pdf", "skill name 'team/pdf' contains '/'"),
        ("x" * 201, "is longer than 200 characters"),
    ],
)
def test_a_skill_name_that_cannot_be_an_address_is_one_line(
    tmp_path: Path, front_matter_name: str, reason: str
) -> None:
    folder = skill_folder(tmp_path, name="folder")
    (folder / "SKILL.md").write_text(f"---\nname: {front_matter_name}\ndescription: d\n---\n")
    eval_magic_iteration(tmp_path, skill="folder")

    with pytest.raises(ImportFailure) as info:
        import_workspace([folder])

    assert str(info.value).startswith(f"{folder}: ") and reason in str(info.value)
    assert "\n" not in str(info.value)
    assert Skill.objects.count() == 0


def test_an_eval_id_with_a_control_character_is_one_line(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path / "ws", cells={("a\x01b", "with_skill"): [{"x": True}]})

    with pytest.raises(ImportFailure) as info:
        import_workspace([folder])

    assert str(info.value) == (f"{folder}: eval id 'a\\x01b' contains a control character (U+0001)")
    assert Iteration.objects.count() == 0


def test_names_claude_code_would_load_are_imported(tmp_path: Path) -> None:
    for name in ("café-helper", "my skill", "日本語スキル"):
        eval_magic_iteration(tmp_path / "ws", skill=name)

    import_workspace([tmp_path / "ws"])

    assert sorted(Skill.objects.values_list("name", flat=True)) == sorted(
        ["café-helper", "my skill", "日本語スキル"]
    )


def test_a_nul_character_in_agent_output_is_stored_as_a_replacement_character(
    tmp_path: Path,
) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    record = folder / "eval-alpha" / "with_skill" / "run.json"
    record.write_text(record.read_text().replace("Done with alpha.", "bin\\u0000ary"))

    import_workspace([folder])

    assert Run.objects.get(condition__name="with_skill").final_message == "bin\ufffdary"


def test_a_run_index_beyond_the_database_column_is_one_line(tmp_path: Path) -> None:
    folder = creator_iteration(tmp_path / "s-workspace" / "iteration-1", runs=1)
    big = folder / "eval-0" / "with_skill" / "run-99999999999"
    (folder / "eval-0" / "with_skill" / "run-1").rename(big)

    with pytest.raises(ImportFailure) as info:
        import_workspace([folder])

    assert str(info.value) == (
        f"{folder}/eval-0/with_skill/run-99999999999: run index 99999999999 is out of range "
        "(0 to 2147483647)"
    )


def test_a_long_eval_name_is_shortened_and_a_long_assertion_id_refused(tmp_path: Path) -> None:
    long_name = {"eval_id": 0, "eval_name": "n" * 400, "prompt": "p"}
    folder = creator_iteration(
        tmp_path / "s-workspace" / "iteration-1", evals={"eval-0": long_name}
    )

    import_workspace([folder])

    assert EvalCase.objects.get().name == "n" * 299 + "…"
    record = grading({"a" * 301: True})
    other = eval_magic_iteration(tmp_path / "ws", cells={("alpha", "with_skill"): [None]})
    write_json(other / "eval-alpha" / "with_skill" / "grading.json", record)
    with pytest.raises(ImportFailure) as info:
        import_workspace([other])
    assert "is 301 characters, over the 300 it may have" in str(info.value)


def test_an_unreadable_file_is_one_line(tmp_path: Path, monkeypatch) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    grading_json = folder / "eval-alpha" / "with_skill" / "grading.json"

    real_open = os.open

    def refuse(path: str, *args: object, **kwargs: object) -> object:
        if str(path) == str(grading_json):  # as a file mode of 000 does, except for root
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)

    with pytest.raises(ImportFailure) as info:
        import_workspace([folder])

    assert str(info.value) == f"{grading_json}: cannot be read: Permission denied"


def test_an_iteration_runevals_ran_unsandboxed_carries_a_warning(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path / "ws")
    conditions = folder / "conditions.json"
    data = json.loads(conditions.read_text())
    data["runevals"] = {"evals": ["alpha"], "sandbox": False}
    conditions.write_text(json.dumps(data))

    import_workspace([folder])

    assert any(
        "--unsafe-no-sandbox" in w for w in messages(Iteration.objects.get().validity_warnings)
    )
