"""The real published results in ../shared/fixtures/real import faithfully."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runs.importing import import_workspace
from runs.models import EvalCase, Grading, Iteration, Run, Skill
from runs.warnings import messages

pytestmark = pytest.mark.django_db

SKILLS = ["working-in-isolation", "auditing-slow-powers-usage", "evaluating-skills"]


def grading_files(skill_dir: Path) -> dict[tuple[str, str, int], dict]:
    found = {}
    for path in sorted((skill_dir / "evals" / "baseline" / "grading").glob("*.json")):
        match = re.match(r"^(.+?)__([a-z_]+?)(?:__r(\d+))?\.json$", path.name)
        eval_id, condition, run = match.groups()
        found[(eval_id, condition, int(run or 1))] = json.loads(path.read_text())
    return found


@pytest.mark.parametrize("skill", SKILLS)
def test_each_real_baseline_imports_with_its_runs_rates_and_invocation_flags(
    real_fixtures: Path, skill: str
) -> None:
    skill_dir = real_fixtures / "slow-powers" / skill
    expected = grading_files(skill_dir)
    benchmark = json.loads((skill_dir / "evals" / "baseline" / "benchmark.json").read_text())

    import_workspace([skill_dir])

    iteration = Iteration.objects.get(skill__name=skill)
    assert iteration.source_kind == "eval-magic-baseline"
    assert iteration.mode == benchmark["mode"]
    assert [c.name for c in iteration.conditions.all()] == benchmark["conditions_compared"]
    roles = dict(iteration.conditions.values_list("name", "role"))
    assert roles == (
        {"with_skill": "treatment", "without_skill": "control"}
        if benchmark["mode"] == "new-skill"
        else {"old_skill": "control", "new_skill": "treatment"}
    )
    assert Run.objects.filter(iteration=iteration).count() == len(expected)
    for (eval_id, condition, run_index), data in expected.items():
        grading = Grading.objects.get(
            run__iteration=iteration,
            run__eval_id=eval_id,
            run__condition__name=condition,
            run__run_index=run_index,
        )
        assert grading.pass_rate == data["summary"]["pass_rate"]
        assert (grading.passed, grading.total) == (
            data["summary"]["passed"],
            data["summary"]["total"],
        )
        assert grading.skill_invoked == (data.get("meta_summary") or {}).get("skill_invoked")
        assert grading.results.filter(is_meta=False).count() == len(data["assertion_results"])
    assert iteration.recorded_benchmark == benchmark
    assert set(iteration.recorded_aggregates["run_summary"]) == set(benchmark["run_summary"])
    notes = (skill_dir / "evals" / "baseline" / "NOTES.md").read_text(encoding="utf-8")
    assert iteration.notes == notes
    assert Skill.objects.get(name=skill).notes == iteration.notes


def test_the_real_baselines_keep_their_provenance(real_fixtures: Path) -> None:
    import_workspace([real_fixtures / "slow-powers"])

    audit = Iteration.objects.get(skill__name="auditing-slow-powers-usage")
    assert (audit.label, audit.run_label, audit.agent_model, audit.judge_model) == (
        "iteration-1",
        "v1-haiku-sonnet",
        "claude-haiku-4-5-20251001",
        "claude-sonnet-4-6",
    )
    assert audit.generated_at.isoformat() == "2026-05-29T01:53:18.024000+00:00"
    assert messages(audit.validity_warnings) == [
        "ordinary-dev-task-no-audit/with_skill wrote 4 file(s) outside its outputs dir — "
        "data point may be tainted (see stray-writes.json)."
    ]
    revision = Iteration.objects.get(skill__name="evaluating-skills")
    assert (revision.mode, revision.baseline) == ("revision", "pre-split")
    isolation = Iteration.objects.get(skill__name="working-in-isolation")
    assert isolation.run_label == ""  # "(none)" in BASELINE.md


def test_the_negative_eval_keeps_skill_should_trigger_false(real_fixtures: Path) -> None:
    import_workspace([real_fixtures / "slow-powers" / "auditing-slow-powers-usage"])

    negative = EvalCase.objects.get(eval_id="ordinary-dev-task-no-audit")
    assert negative.skill_should_trigger is False
    assert set(
        Run.objects.filter(eval_id=negative.eval_id).values_list("eval_case", flat=True)
    ) == {negative.pk}


def test_a_stale_baseline_links_its_runs_to_what_actually_ran(real_fixtures: Path) -> None:
    # Every eval of these baselines was graded against the assertions in evals.json, so each
    # run links to the evals.json definition, never to a rebuilt one.
    import_workspace([real_fixtures / "slow-powers"])

    assert not EvalCase.objects.filter(origin="results").exists()
    assert Run.objects.exclude(eval_case__origin="evals.json").count() == 0


def test_importing_the_real_fixtures_twice_changes_nothing(real_fixtures: Path) -> None:
    import_workspace([real_fixtures / "slow-powers"])

    report = import_workspace([real_fixtures / "slow-powers"])

    assert report.counts["iterations"] == {"skipped": 3}
    assert report.counts["runs"] == {"skipped": 22}
    assert "created" not in report.counts["eval definitions"]
