"""skill-creator iterations read as leniently as skill-creator's own aggregator and viewer
read them, and never silently: every file it tolerated is named in a validity warning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from runs.importing import ImportFailure, import_workspace
from runs.importing.skill_creator import read_iteration
from runs.importing.tree import read_tree
from runs.models import EvalCase, Grading, Iteration, Review, Run
from runs.warnings import messages
from tests.factories import skill_creator_iteration, write_json

pytestmark = pytest.mark.django_db

EVAL = "eval-0-summarise"


def edit_json(path: Path, **changes: Any) -> None:
    """Set top-level keys of a JSON file (None writes a JSON null)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(changes)
    write_json(path, data)


def run_dir(folder: Path, config: str, k: int) -> Path:
    return folder / EVAL / config / f"run-{k}"


def warnings_of(iteration: Iteration | None = None) -> list[str]:
    return messages((iteration or Iteration.objects.get()).validity_warnings)


def pass_rates() -> dict[tuple[str, str, int], float]:
    return {
        (g.run.eval_id, g.run.condition.name, g.run.run_index): g.pass_rate
        for g in Grading.objects.select_related("run__condition")
    }


NORMAL_RATES = {
    ("0", "with_skill", 1): 1.0,
    ("0", "with_skill", 2): 1.0,
    ("0", "without_skill", 1): 0.5,
    ("0", "without_skill", 2): 0.5,
}


def a_benchmark(**run: Any) -> dict[str, Any]:
    """A skill-creator benchmark.json with one runs[] entry; `run` overrides its keys
    (`...` removes one)."""
    entry = {
        "eval_id": 0,
        "configuration": "with_skill",
        "run_number": 1,
        "result": {"pass_rate": 1.0, "passed": 2, "failed": 0, "total": 2},
        "expectations": [{"text": "Mentions the total", "passed": True, "evidence": ""}],
    }
    return {
        "metadata": {"skill_name": "creator-skill", "timestamp": "2026-04-01T10:00:00Z"},
        "runs": [{k: v for k, v in {**entry, **run}.items() if v is not ...}],
        "run_summary": {
            "with_skill": {"pass_rate": {"mean": 0.25}},
            "without_skill": {"pass_rate": {"mean": 0.5}},
        },
    }


# --- Nulls where skill-creator's reader sees a missing key ------------------------------------


def test_nulls_for_optional_keys_import_with_one_warning_per_kind_of_file(tmp_path: Path) -> None:
    folder = skill_creator_iteration(tmp_path)
    for k in (1, 2):
        edit_json(
            run_dir(folder, "with_skill", k) / "grading.json", user_notes_summary=None, claims=None
        )
    edit_json(run_dir(folder, "without_skill", 1) / "timing.json", source=None)
    edit_json(folder / EVAL / "eval_metadata.json", eval_name=None, expectations=None)
    benchmark = a_benchmark(run_number=None)
    benchmark["metadata"]["executor_model"] = None
    write_json(folder / "benchmark.json", benchmark)
    write_json(
        folder / "feedback.json",
        {
            "reviews": [
                {"run_id": f"{EVAL}-with_skill-run-1", "feedback": None, "timestamp": None},
                {"run_id": f"{EVAL}-with_skill-run-2", "feedback": "Too long.", "timestamp": None},
            ],
            "status": None,
        },
    )

    import_workspace([folder])

    assert pass_rates() == NORMAL_RATES
    assert list(Review.objects.values_list("text", flat=True)) == ["Too long."]
    shown = str(folder)
    warnings = warnings_of()
    assert (
        "null read as a missing value at /claims, /user_notes_summary in 2 grading.json "
        f"file(s): {shown}/{EVAL}/with_skill/run-1/grading.json, "
        f"{shown}/{EVAL}/with_skill/run-2/grading.json"
    ) in warnings
    assert (
        "null read as a missing value at /source in 1 timing.json file(s): "
        f"{shown}/{EVAL}/without_skill/run-1/timing.json"
    ) in warnings
    assert (
        "null read as a missing value at /expectations in 1 eval_metadata.json file(s): "
        f"{shown}/{EVAL}/eval_metadata.json"
    ) in warnings
    assert (
        "null read as a missing value at /metadata/executor_model, /runs/*/run_number in 1 "
        f"benchmark.json file(s): {shown}/benchmark.json"
    ) in warnings
    assert (
        "null read as a missing value at /reviews/*/feedback in 1 feedback.json file(s): "
        f"{shown}/feedback.json"
    ) in warnings
    # eval_name: null was always allowed (the eval is named after its folder), unwarned.
    assert EvalCase.objects.get().name == "0-summarise"


def test_a_warning_names_a_few_files_and_counts_the_rest(tmp_path: Path) -> None:
    folder = skill_creator_iteration(tmp_path, runs=4)
    for config in ("with_skill", "without_skill"):
        for k in range(1, 5):
            edit_json(run_dir(folder, config, k) / "grading.json", user_notes_summary=None)

    import_workspace([folder])

    [warning] = [w for w in warnings_of() if "grading.json file(s)" in w]
    assert warning.startswith("null read as a missing value at /user_notes_summary in 8 ")
    assert warning.endswith(" and 3 more") and warning.count("grading.json, ") == 4


def test_a_null_where_skill_creator_always_writes_a_value_is_still_rejected_by_pointer(
    tmp_path: Path,
) -> None:
    folder = skill_creator_iteration(tmp_path)
    path = run_dir(folder, "with_skill", 1) / "grading.json"
    data = json.loads(path.read_text())
    data["expectations"][0]["text"] = None
    data["claims"] = None
    write_json(path, data)

    with pytest.raises(ImportFailure) as info:
        import_workspace([folder])

    assert str(info.value) == (
        f"{path} at /expectations/0/text: expected string, got null "
        "(schema skill-creator-grading.schema.json)"
    )
    assert Run.objects.count() == 0


# --- benchmark.json beside gradings costs only itself -----------------------------------------


def test_a_benchmark_run_without_eval_id_beside_gradings_is_only_cross_checked(
    tmp_path: Path,
) -> None:
    folder = skill_creator_iteration(tmp_path)
    write_json(folder / "benchmark.json", a_benchmark(eval_id=...))

    import_workspace([folder])

    assert pass_rates() == NORMAL_RATES
    warnings = warnings_of()
    assert (
        f"{folder}/benchmark.json at /runs/0/eval_id: missing required key 'eval_id' (schema "
        "skill-creator-benchmark.schema.json); the gradings beside it were imported, and "
        "benchmark.json only cross-checked against them"
    ) in warnings
    # Its run_summary is still checked against the gradings.
    assert (
        "recorded benchmark.json gives with_skill a mean pass rate of 0.250; its runs give 1.000"
    ) in warnings
    iteration = Iteration.objects.get()
    assert iteration.recorded_benchmark["runs_not_kept"] == 1
    assert iteration.source_key == "iteration-1@2026-04-01T10:00:00Z"


def test_a_lone_benchmark_must_be_valid(tmp_path: Path) -> None:
    folder = tmp_path / "creator-skill-workspace" / "iteration-1"
    write_json(folder / "benchmark.json", a_benchmark(eval_id=...))

    with pytest.raises(ImportFailure) as info:
        import_workspace([folder])

    assert str(info.value) == (
        f"{folder}/benchmark.json at /runs/0/eval_id: missing required key 'eval_id' "
        "(schema skill-creator-benchmark.schema.json)"
    )


def test_a_benchmark_that_is_not_json_beside_gradings_costs_only_itself(tmp_path: Path) -> None:
    # A skill folder beside the workspace names the skill, so nothing else reads the file.
    (tmp_path / "creator-skill").mkdir()
    (tmp_path / "creator-skill" / "SKILL.md").write_text(
        "---\nname: creator-skill\ndescription: d\n---\n", encoding="utf-8"
    )
    folder = skill_creator_iteration(tmp_path)
    (folder / "benchmark.json").write_text('{"metadata": ', encoding="utf-8")

    import_workspace([tmp_path])

    assert pass_rates() == NORMAL_RATES
    [warning] = [w for w in warnings_of() if "benchmark.json" in w]
    assert warning.startswith(f"{tmp_path}/creator-skill-workspace/iteration-1/benchmark.json: ")
    assert "invalid JSON" in warning
    assert warning.endswith("; the gradings beside it were imported without it")
    assert Iteration.objects.get().recorded_benchmark is None


def test_a_lone_benchmark_that_is_not_json_is_rejected_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "creator-skill-workspace" / "iteration-1"
    folder.mkdir(parents=True)
    (folder / "benchmark.json").write_text("not json", encoding="utf-8")

    with pytest.raises(ImportFailure) as info:
        import_workspace([folder])

    assert str(info.value).startswith(f"{folder}/benchmark.json: invalid JSON")


# --- Two eval folders with one eval_id ---------------------------------------------------------


def second_folder(folder: Path, name: str, *, prompt: str | None, runs: int = 2) -> Path:
    """Another eval folder of the iteration with eval_id 0 (no metadata when prompt is None)."""
    eval_dir = folder / name
    if prompt is not None:
        write_json(eval_dir / "eval_metadata.json", {"eval_id": 0, "prompt": prompt})
    for config in ("with_skill", "without_skill"):
        for k in range(1, runs + 1):
            write_json(
                eval_dir / config / f"run-{k}" / "grading.json",
                {"expectations": [{"text": "Mentions the total", "passed": False}]},
            )
    return eval_dir


def test_two_folders_with_one_id_and_one_prompt_are_one_eval(tmp_path: Path) -> None:
    folder = skill_creator_iteration(tmp_path)
    second_folder(folder, "eval-0-try2", prompt="  Summarise the\nreport. ")

    import_workspace([folder])

    runs = Run.objects.filter(condition__name="with_skill").order_by("run_index")
    assert [(r.eval_id, r.run_index, r.source_relpath) for r in runs] == [
        ("0", 1, f"{EVAL}/with_skill/run-1"),
        ("0", 2, f"{EVAL}/with_skill/run-2"),
        ("0", 3, "eval-0-try2/with_skill/run-1"),
        ("0", 4, "eval-0-try2/with_skill/run-2"),
    ]
    assert [
        g.pass_rate for g in Grading.objects.filter(run__in=runs).order_by("run__run_index")
    ] == [
        1.0,
        1.0,
        0.0,
        0.0,
    ]
    assert EvalCase.objects.get().prompt == "Summarise the report."
    assert (
        f"eval '0' is in {EVAL}/ and eval-0-try2/ with the same prompt: imported as one eval, "
        "the later folder's runs numbered after the earlier's"
    ) in warnings_of()


def test_a_folder_without_metadata_beside_one_with_it_is_a_distinct_eval(tmp_path: Path) -> None:
    folder = skill_creator_iteration(tmp_path)
    # No eval_metadata.json: its id is its folder name's, "0", the other folder's eval_id.
    second_folder(folder, "eval-0", prompt=None, runs=1)

    import_workspace([folder])

    assert sorted(Run.objects.values_list("eval_id", "condition__name", "run_index")) == [
        ("0", "with_skill", 1),
        ("0", "without_skill", 1),
        (f"0@{EVAL}", "with_skill", 1),
        (f"0@{EVAL}", "with_skill", 2),
        (f"0@{EVAL}", "without_skill", 1),
        (f"0@{EVAL}", "without_skill", 2),
    ]
    assert EvalCase.objects.get(eval_id=f"0@{EVAL}").prompt == "Summarise the report."
    assert (
        f"eval id '0' is used by eval-0/ and {EVAL}/ for different evals: imported as "
        f"distinct evals 0, 0@{EVAL}"
    ) in warnings_of()


# --- A grading that cannot be read -------------------------------------------------------------


def broken_grading(tmp_path: Path) -> tuple[Path, Path]:
    folder = skill_creator_iteration(tmp_path)
    path = run_dir(folder, "without_skill", 2) / "grading.json"
    path.write_text('{"expectations": [', encoding="utf-8")
    return folder, path


def test_a_grading_that_is_not_json_rejects_the_import_naming_the_file(tmp_path: Path) -> None:
    folder, path = broken_grading(tmp_path)

    with pytest.raises(CommandError) as info:
        call_command("importworkspace", str(folder))

    assert str(info.value).startswith(f"{path}: invalid JSON")
    assert Run.objects.count() == 0


def read(folder: Path, *, keep_going: bool) -> Any:
    return read_iteration(
        read_tree(folder, display=str(folder)),
        skill_name="creator-skill",
        label="iteration-1",
        definitions={},
        keep_going=keep_going,
    )


def test_with_keep_going_an_unreadable_grading_is_a_missing_grading_named(tmp_path: Path) -> None:
    folder, path = broken_grading(tmp_path)
    invalid = run_dir(folder, "with_skill", 1) / "grading.json"
    write_json(invalid, {"expectations": [{"text": "Mentions the total", "passed": "yes"}]})

    with pytest.raises(ImportFailure):
        read(folder, keep_going=False)
    parsed = read(folder, keep_going=True)

    ungraded = sorted((r.condition, r.run_index) for r in parsed.runs if r.grading is None)
    assert ungraded == [("with_skill", 1), ("without_skill", 2)]
    [warning] = [w.message for w in parsed.notices if w.code == "gradings-not-read"]
    assert warning.startswith(
        "2 grading file(s) could not be read, their runs imported as missing gradings: "
        f'{invalid} at /expectations/0/passed: expected boolean, got "yes" '
    )
    assert f"; {path}: invalid JSON" in warning


# --- The author format <configuration>/eval-<id>-grading.json ----------------------------------


def author_iteration(folder: Path) -> Path:
    for config, passed in (("with_skill", True), ("without_skill", False)):
        for eval_id in (1, 2):
            write_json(
                folder / config / f"eval-{eval_id}-grading.json",
                {
                    "expectations": [
                        {"text": "Cites the source", "passed": passed, "evidence": None},
                        {"text": "Is polite", "passed": True, "evidence": "Thanks!"},
                    ],
                    "user_notes_summary": None,
                },
            )
    write_json(
        folder / "with_skill" / "run-2" / "eval-1-grading.json",
        {"expectations": [{"text": "Cites the source", "passed": False}]},
    )
    return folder


def test_the_author_format_is_one_run_per_grading_file(tmp_path: Path) -> None:
    folder = author_iteration(tmp_path / "author-workspace" / "iteration-1")

    parsed = read(folder, keep_going=False)

    found = {
        (r.eval_id, r.condition, r.run_index): (r.source_relpath, r.grading.pass_rate)
        for r in parsed.runs
    }
    assert found == {
        ("1", "with_skill", 1): ("with_skill/eval-1-grading.json", 1.0),
        ("1", "with_skill", 2): ("with_skill/run-2/eval-1-grading.json", 0.0),
        ("2", "with_skill", 1): ("with_skill/eval-2-grading.json", 1.0),
        ("1", "without_skill", 1): ("without_skill/eval-1-grading.json", 0.5),
        ("2", "without_skill", 1): ("without_skill/eval-2-grading.json", 0.5),
    }
    assert [c.name for c in parsed.conditions] == ["with_skill", "without_skill"]
    assert any(w.code == "nulls-read-as-missing" for w in parsed.notices)


# --- Runs with outputs and no grading ----------------------------------------------------------


def test_runs_with_outputs_and_no_grading_are_named_as_such(tmp_path: Path) -> None:
    folder = skill_creator_iteration(tmp_path)
    (run_dir(folder, "without_skill", 2) / "grading.json").unlink()
    outputs = folder / EVAL / "with_skill" / "run-3" / "outputs"
    outputs.mkdir(parents=True)
    (outputs / "summary.md").write_text("Total: 4", encoding="utf-8")
    (folder / EVAL / "without_skill" / "run-3").mkdir()  # empty: no outputs to speak of

    import_workspace([folder])

    warnings = warnings_of()
    assert (
        f"2 run(s) have outputs but no grading.json: {EVAL}/with_skill/run-3, "
        f"{EVAL}/without_skill/run-2"
    ) in warnings
    assert Iteration.objects.get().missing_gradings == 3


# --- What holds --------------------------------------------------------------------------------


def test_a_tolerated_iteration_imported_again_is_skipped(tmp_path: Path, capsys) -> None:
    folder = skill_creator_iteration(tmp_path)
    edit_json(run_dir(folder, "with_skill", 1) / "grading.json", user_notes_summary=None)
    second_folder(folder, "eval-0-try2", prompt="Summarise the report.")
    write_json(folder / "benchmark.json", a_benchmark(eval_id=...))

    call_command("importworkspace", str(folder))
    before = list(Iteration.objects.values_list("validity_warnings", flat=True))
    call_command("importworkspace", str(folder))

    out = capsys.readouterr().out.splitlines()
    assert "iterations: 0 created, 0 updated, 1 unchanged" in out[-1]
    assert list(Iteration.objects.values_list("validity_warnings", flat=True)) == before
    assert Run.objects.count() == 8


def test_a_normal_iteration_carries_no_leniency_warning(tmp_path: Path) -> None:
    import_workspace([skill_creator_iteration(tmp_path)])

    assert pass_rates() == NORMAL_RATES
    assert warnings_of() == []


def test_a_configuration_kept_only_in_the_benchmark_is_read_from_it(tmp_path: Path) -> None:
    folder = tmp_path / "gke-workspace" / "iteration-1"
    runs = []
    for eval_id in (1, 2):
        metadata = {"eval_id": eval_id, "prompt": f"Plan {eval_id}.", "assertions": []}
        write_json(folder / f"eval-{eval_id}" / "eval_metadata.json", metadata)
        write_json(
            folder / f"eval-{eval_id}" / "with_skill" / "grading.json",
            {"expectations": [{"text": "Plans", "passed": True, "evidence": "…"}]},
        )
        for config, rate in (("with_skill", 1.0), ("without_skill", 0.5)):
            result = {"pass_rate": rate, "passed": int(rate * 2), "total": 2}
            runs.append(
                {"eval_id": eval_id, "configuration": config, "run_number": 1, "result": result}
            )
    write_json(folder / "benchmark.json", {"metadata": {}, "runs": runs})

    import_workspace([tmp_path / "gke-workspace"])

    it = Iteration.objects.get()
    rates = {
        (r.eval_id, r.condition.name): r.grading.pass_rate
        for r in Run.objects.filter(iteration=it).select_related("condition", "grading")
    }
    assert rates == {
        ("1", "with_skill"): 1.0, ("2", "with_skill"): 1.0,
        ("1", "without_skill"): 0.5, ("2", "without_skill"): 0.5,
    }  # fmt: skip
    assert "benchmark-only-runs" in [w["code"] for w in it.validity_warnings]
