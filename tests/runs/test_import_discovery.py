"""Discovery from the result files up (SPEC §3.6): layouts as authors leave them, built from
skill-creator's and eval-magic's descriptions and from what public repositories hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from runs.importing import ImportFailure, import_workspace
from runs.models import Iteration, Run, Skill
from tests.factories import eval_magic_iteration, write_json

pytestmark = pytest.mark.django_db


def skill(folder: Path, name: str | None = None, *, prompts: list[str] | None = None) -> Path:
    """A real skill folder: SKILL.md, and an evals.json holding `prompts` when given."""
    folder.mkdir(parents=True, exist_ok=True)
    name = name or folder.name
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Use when testing discovery.\n---\n\n# {name}\n",
        encoding="utf-8",
    )
    if prompts:
        evals = [
            {"id": i + 1, "prompt": p, "expectations": ["It works"]} for i, p in enumerate(prompts)
        ]
        write_json(folder / "evals" / "evals.json", {"skill_name": name, "evals": evals})
    return folder


def iteration(
    folder: Path,
    evals: dict[str, dict[str, Any] | None] | None = None,
    *,
    runs: int = 1,
    benchmark: dict[str, Any] | None = None,
) -> Path:
    """A skill-creator iteration: each eval folder (metadata or None) with with_skill passing
    and without_skill failing its one expectation, `runs` run-<k> folders each."""
    evals = evals or {"eval-1": {"eval_id": 1, "prompt": "Summarise.", "assertions": ["It works"]}}
    for eval_dir, metadata in evals.items():
        if metadata is not None:
            write_json(folder / eval_dir / "eval_metadata.json", metadata)
        for config, passed in (("with_skill", True), ("without_skill", False)):
            for k in range(1, runs + 1):
                run = folder / eval_dir / config / (f"run-{k}" if runs > 1 else "")
                write_json(
                    run / "grading.json",
                    {"expectations": [{"text": "It works", "passed": passed, "evidence": "…"}]},
                )
    if benchmark is not None:
        write_json(folder / "benchmark.json", benchmark)
    return folder


def filed() -> dict[str, list[str]]:
    """Each skill's iteration labels, in order."""
    return {
        s.name: list(s.iterations.order_by("number").values_list("label", flat=True))
        for s in Skill.objects.order_by("name")
    }


def pass_rates(skill_name: str, label: str) -> dict[str, float]:
    it = Iteration.objects.get(skill__name=skill_name, label=label)
    rates: dict[str, list[float]] = {}
    for run in Run.objects.filter(iteration=it).select_related("condition", "grading"):
        rates.setdefault(run.condition.name, []).append(run.grading.pass_rate)
    return {name: sum(v) / len(v) for name, v in sorted(rates.items())}


# --- Where a workspace sits ----------------------------------------------------------------


@pytest.mark.parametrize("inside", ["workspace", "evals/workspace", "evals", "."])
def test_a_workspace_inside_a_skill_folder_belongs_to_it(tmp_path: Path, inside: str) -> None:
    folder = skill(tmp_path / "repo" / "skills" / "pdf-tools")
    skill(tmp_path / "repo" / "skills" / "other")  # not the only skill: containment decides
    iteration(folder / inside / "iteration-1")
    iteration(folder / inside / "iteration-2")

    import_workspace([tmp_path / "repo"])

    assert filed() == {"other": [], "pdf-tools": ["iteration-1", "iteration-2"]}
    assert pass_rates("pdf-tools", "iteration-2") == {"with_skill": 1.0, "without_skill": 0.0}


def test_an_eval_workspace_at_the_root_is_a_workspace_not_an_eval(tmp_path: Path) -> None:
    repo = tmp_path / "clone"
    skill(repo / "skills" / "changelog")
    iteration(repo / "eval-workspace" / "iteration-1")
    iteration(repo / "eval-workspace" / "iteration-2")

    import_workspace([repo])

    assert filed() == {"changelog": ["iteration-1", "iteration-2"]}
    it = Iteration.objects.get(label="iteration-2")
    assert sorted(it.conditions.values_list("name", flat=True)) == ["with_skill", "without_skill"]
    assert Run.objects.filter(iteration=it, grading__isnull=True).count() == 0


def test_a_workspace_away_from_its_skill_folder_is_found_by_its_name(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    skill(repo / "packages" / "swot-analysis")
    skill(repo / "packages" / "okr-writer")
    iteration(repo / "package-workspaces" / "swot-analysis-workspace" / "iteration-1")

    import_workspace([repo])

    assert filed() == {"okr-writer": [], "swot-analysis": ["iteration-1"]}


def test_stub_and_snapshot_skill_files_in_results_never_make_a_skill(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    skill(repo / "note-organizer")
    workspace = repo / "workspaces" / "notes"
    skill(workspace, "note-organizer-workspace")  # a generated stub
    first = iteration(workspace / "iteration-1")
    (first / "SKILL.md").write_text("---\nname: note-organizer\n---\nold copy\n", "utf-8")
    iteration(workspace / "iteration-2")

    import_workspace([repo])

    assert filed() == {"note-organizer": ["iteration-1", "iteration-2"]}


def test_a_lone_workspace_is_named_past_generic_folder_names(tmp_path: Path) -> None:
    iteration(tmp_path / "my-skill-results" / "workspace" / "iteration-1")

    import_workspace([tmp_path / "my-skill-results"])

    assert filed() == {"my-skill-results": ["iteration-1"]}


# --- Whose results they are ------------------------------------------------------------------


def test_a_multi_skill_workspace_is_filed_per_skill_its_results_name(tmp_path: Path) -> None:
    repo = tmp_path / "plugin"
    skill(repo / "skills" / "ggplot")
    skill(repo / "skills" / "testthat")
    evals = {
        "plot-eval": {"eval_id": 1, "skill": "ggplot", "prompt": "Plot.", "assertions": []},
        "test-eval": {"eval_id": 2, "skill": "testthat", "prompt": "Test.", "assertions": []},
    }
    benchmark = {"metadata": {"skill_name": "rOpenSci skills (batch 1, iter 1)"}, "runs": []}
    iteration(repo / "workspace" / "iteration-1", evals, benchmark=benchmark)
    iteration(repo / "workspace" / "iteration-2", evals)

    import_workspace([repo])

    assert filed() == {
        "ggplot": ["iteration-1", "iteration-2"],
        "testthat": ["iteration-1", "iteration-2"],
    }
    ggplot = Iteration.objects.get(skill__name="ggplot", label="iteration-1")
    assert set(Run.objects.filter(iteration=ggplot).values_list("eval_id", flat=True)) == {"1"}
    assert [w["code"] for w in ggplot.validity_warnings] == ["benchmark-of-several-skills"]


def test_benchmark_runs_name_the_skill_of_eval_folders_without_metadata(tmp_path: Path) -> None:
    repo = tmp_path / "plugin"
    skill(repo / "skills" / "alpha")
    skill(repo / "skills" / "beta")
    runs = [
        {"eval_id": eval_id, "skill": name, "configuration": c, "run_number": 1,
         "result": {"pass_rate": 1.0, "passed": 1, "total": 1}}
        for eval_id, name in (("a1", "alpha"), ("b1", "beta"))
        for c in ("with_skill", "without_skill")
    ]  # fmt: skip
    iteration(repo / "ws" / "iteration-1", {"eval-a1": None, "eval-b1": None},
              benchmark={"metadata": {}, "runs": runs})  # fmt: skip

    import_workspace([repo])

    assert filed() == {"alpha": ["iteration-1"], "beta": ["iteration-1"]}


def test_evals_are_matched_to_the_skill_whose_evals_json_holds_their_prompt(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "docs-review"
    skill(repo / "skills" / "api-docs", prompts=["Document this endpoint."])
    skill(repo / "skills" / "changelog", prompts=["Write the changelog."])
    evals = {
        "apidocs-eval1": {"eval_id": 1, "prompt": "Document this  endpoint.", "assertions": []},
        "changelog-eval1": {"eval_id": 2, "prompt": "Write the changelog.", "assertions": []},
    }
    iteration(repo / "eval-workspace" / "iteration-1", evals)
    # The next iteration kept the folders but wrote no eval_metadata.json.
    iteration(repo / "eval-workspace" / "iteration-2", dict.fromkeys(evals))

    import_workspace([repo])

    assert filed() == {
        "api-docs": ["iteration-1", "iteration-2"],
        "changelog": ["iteration-1", "iteration-2"],
    }


def test_one_workspace_is_one_skill_even_where_an_iteration_has_no_benchmark(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "results"
    iteration(
        workspace / "iteration-1", benchmark={"metadata": {"skill_name": "csv-fixer"}, "runs": []}
    )
    iteration(workspace / "iteration-2")

    import_workspace([workspace])

    assert filed() == {"csv-fixer": ["iteration-1", "iteration-2"]}


# --- Labels ----------------------------------------------------------------------------------


def test_labels_are_what_the_author_wrote_and_never_merge_two_iterations(tmp_path: Path) -> None:
    workspace = tmp_path / "tool-workspace"
    iteration(workspace / "batch1" / "iteration-1")
    iteration(workspace / "batch2" / "iteration-1")
    iteration(workspace / "iteration-7-rerun")
    iteration(workspace / "tier2")

    import_workspace([workspace])

    assert sorted(filed()["tool"]) == [
        "batch1/iteration-1", "batch2/iteration-1", "iteration-7-rerun", "tier2"
    ]  # fmt: skip


# --- Never silent ----------------------------------------------------------------------------


def test_author_formats_are_refused_by_name_and_the_rest_imported(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    skill(repo / "roast")
    iteration(repo / "roast" / "evals" / "iteration-2")
    write_json(repo / "roast" / "evals" / "iteration-1" / "benchmark.json",
               {"iteration": 1, "per_case": [{"case": "a", "score": 0.9}]})  # fmt: skip
    write_json(repo / "roast" / "evals" / "iteration-2" / "eval_summary.json", {"verdict": "ok"})
    write_json(repo / "roast" / "evals" / "trigger-results.json", [{"query": "q", "pass": True}])

    report = import_workspace([repo])

    assert filed() == {"roast": ["iteration-2"]}
    evals = f"{repo}/roast/evals"
    assert report.unimported == [
        f"{evals}/iteration-1/benchmark.json: unrecognised result format (a benchmark.json "
        "without skill-creator's runs[]; it holds iteration, per_case), and no gradings beside it",
        f"{evals}/iteration-2/eval_summary.json: unrecognised result format (eval_summary.json "
        "verdicts)",
        f"{evals}/trigger-results.json: unrecognised result format (its name says trigger "
        "evals, but it holds neither a set of {query, should_trigger} nor results evalsite "
        "reads)",
    ]


def test_a_grading_directly_in_an_iteration_is_named_as_misplaced(tmp_path: Path) -> None:
    workspace = tmp_path / "x-workspace"
    iteration(workspace / "iteration-1")
    write_json(workspace / "iteration-1" / "with_skill" / "grading.json", {"expectations": []})

    report = import_workspace([workspace])

    assert filed() == {"x": ["iteration-1"]}
    assert report.unimported == [
        f"{workspace}/iteration-1/with_skill: a grading.json in a folder directly inside an "
        "iteration (expected <eval>/<configuration>/[run-<k>/]grading.json); not read"
    ]


def test_nothing_importable_names_every_folder(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        write_json(tmp_path / name / "eval_summary.json", {})

    with pytest.raises(ImportFailure) as info:
        import_workspace([tmp_path])

    assert str(info.value) == "nothing imported: " + "; ".join(
        f"{tmp_path}/{name}/eval_summary.json: unrecognised result format (eval_summary.json "
        "verdicts)"
        for name in ("a", "b", "c")
    )


def test_the_dry_run_prints_the_plan_as_a_tree(tmp_path: Path, capsys) -> None:
    repo = tmp_path / "repo"
    folder = skill(repo / "skills" / "pdf-tools")
    iteration(folder / "evals" / "workspace" / "iteration-1")
    eval_magic_iteration(repo / "runs-of", skill="linter")
    write_json(repo / "notes" / "eval_summary.json", {})

    call_command("importworkspace", "--dry-run", str(repo))

    lines = capsys.readouterr().out.splitlines()
    assert lines[: lines.index("  not imported:") + 2] == [
        "Plan:",
        "  pdf-tools",
        f"    skill folder {repo}/skills/pdf-tools",
        f"    iteration-1 <- {repo}/skills/pdf-tools/evals/workspace/iteration-1 "
        "(inside its skill folder)",
        "  linter",
        f"    iteration-1 <- {repo}/runs-of/linter/iteration-1 (linter/ holds it, as "
        "eval-magic lays out a skill's iterations)",
        "  not imported:",
        f"    {repo}/notes/eval_summary.json: unrecognised result format (eval_summary.json "
        "verdicts)",
    ]
    assert lines[-1].startswith("  not imported: ")
    assert Iteration.objects.count() == 0


def test_a_keep_going_import_of_nothing_says_so_plainly(tmp_path: Path) -> None:
    workspace = tmp_path / "x-workspace"
    (workspace / "iteration-1").mkdir(parents=True)
    (workspace / "iteration-1" / "benchmark.json").write_text("{not json", "utf-8")

    report = import_workspace([workspace], keep_going=True)

    assert report.summary().startswith("Nothing imported; 1 rejected")


def test_the_author_format_of_per_configuration_gradings_is_an_iteration(tmp_path: Path) -> None:
    workspace = tmp_path / "repo" / "workspace"
    for config, passed in (("claude_with_skill", True), ("claude_without_skill", False)):
        for eval_id in ("1", "2"):
            write_json(
                workspace / "iteration-2" / config / f"eval-{eval_id}-grading.json",
                {"expectations": [{"text": "It works", "passed": passed, "evidence": "…"}]},
            )

    import_workspace([tmp_path / "repo"])

    assert filed() == {"repo": ["iteration-2"]}
    assert pass_rates("repo", "iteration-2") == {
        "claude_with_skill": 1.0,
        "claude_without_skill": 0.0,
    }


def test_keep_going_imports_an_iteration_with_an_unreadable_grading_named(tmp_path: Path) -> None:
    workspace = tmp_path / "x-workspace"
    iteration(workspace / "iteration-1", runs=2)
    broken = workspace / "iteration-1" / "eval-1" / "without_skill" / "run-2" / "grading.json"
    broken.write_text("{not json", "utf-8")

    report = import_workspace([workspace], keep_going=True)

    assert report.rejected == []
    it = Iteration.objects.get()
    assert Run.objects.filter(iteration=it, grading__isnull=True).count() == 1
    assert any(str(broken) in w["message"] for w in it.validity_warnings)


def test_eval_metadata_kept_in_a_configuration_folder_describes_its_eval(tmp_path: Path) -> None:
    workspace = tmp_path / "kelet-workspace" / "iteration-7-rerun"
    for config, passed in (("with_skill", True), ("without_skill", False)):
        write_json(
            workspace / "eval-trace" / config / "eval_metadata.json",
            {"eval_id": 3, "prompt": "Trace the bug.", "assertions": ["It works"]},
        )
        write_json(
            workspace / "eval-trace" / config / "grading.json",
            {"expectations": [{"text": "It works", "passed": passed, "evidence": "…"}]},
        )

    import_workspace([tmp_path / "kelet-workspace"])

    assert filed() == {"kelet": ["iteration-7-rerun"]}
    assert pass_rates("kelet", "iteration-7-rerun") == {"with_skill": 1.0, "without_skill": 0.0}
    assert set(Run.objects.values_list("eval_id", "prompt")) == {("3", "Trace the bug.")}


def test_an_iteration_of_outputs_only_runs_is_named_not_skipped(tmp_path: Path) -> None:
    workspace = tmp_path / "x-workspace"
    for config in ("with_skill", "without_skill"):
        out = workspace / "iteration-1" / "eval-1" / config / "outputs"
        out.mkdir(parents=True)
        (out / "answer.md").write_text("42", "utf-8")

    import_workspace([workspace])

    it = Iteration.objects.get()
    assert Run.objects.filter(iteration=it, grading__isnull=True).count() == 2
    assert [w["code"] for w in it.validity_warnings] == ["outputs-without-grading", "no-grading"]


def test_results_deeper_than_the_walk_goes_are_named(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(16)])
    iteration(deep / "x-workspace" / "iteration-1")
    iteration(tmp_path / "y-workspace" / "iteration-1")

    report = import_workspace([tmp_path])

    assert filed() == {"y": ["iteration-1"]}
    assert report.unimported == [f"{deep}: more than 16 folders deep; not searched"]


def test_a_benchmark_naming_skills_with_a_prefix_names_the_skill_folders(tmp_path: Path) -> None:
    repo = tmp_path / "ropensci-skills"
    skill(repo / "blog-post")
    skill(repo / "package-standards")
    evals = {
        "pkgstd-audit": {"eval_id": 1, "skill": "package-standards", "prompt": "Audit.",
                         "assertions": []},
        "pkgstd-new-package": None,  # no eval_metadata.json: the benchmark's run names it
        "blog-write": {"eval_id": 3, "skill": "blog-post", "prompt": "Blog.", "assertions": []},
    }  # fmt: skip
    runs = [
        {"eval_id": 0, "eval_name": "pkgstd-new-package", "skill": "ropensci-package-standards",
         "configuration": c, "run_number": 1, "result": {"pass_rate": 1.0, "passed": 1,
         "total": 1}}
        for c in ("with_skill", "without_skill")
    ]  # fmt: skip
    iteration(
        repo / "eval-workspace" / "iteration-3", evals, benchmark={"metadata": {}, "runs": runs}
    )

    import_workspace([repo])

    assert filed() == {"blog-post": ["iteration-3"], "package-standards": ["iteration-3"]}
    standards = Iteration.objects.get(skill__name="package-standards")
    assert set(Run.objects.filter(iteration=standards).values_list("eval_id", flat=True)) == {
        "1", "pkgstd-new-package"
    }  # fmt: skip
