"""Statistics fed from the database: summaries, verdicts and the eval-magic benchmark."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.importing import import_workspace
from runs.models import Iteration
from runs.reading.benchmark import eval_magic_benchmark
from runs.reading.summaries import summarise_iterations
from tests.factories import eval_magic_iteration

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "runs" / "sample"
SCHEMA = json.loads((ROOT / "schemas" / "benchmark.schema.json").read_text())


@pytest.fixture
def sample() -> None:
    import_workspace([SAMPLE])


def iteration(skill: str, number: int) -> Iteration:
    return Iteration.objects.get(skill__name=skill, number=number)


@pytest.mark.parametrize("number", [1, 2, 3, 4])
def test_the_recomputed_benchmark_equals_the_samples_recorded_one(sample, number: int) -> None:
    it = iteration("taming-flaky-tests", number)

    benchmark = eval_magic_benchmark(it)

    jsonschema.Draft7Validator(SCHEMA).validate(benchmark)
    recorded = it.recorded_benchmark
    for key in ("mode", "conditions_compared", "missing_gradings", "run_summary", "delta"):
        assert benchmark[key] == recorded[key], key


@pytest.mark.parametrize(
    "skill", ["working-in-isolation", "auditing-slow-powers-usage", "evaluating-skills"]
)
def test_the_benchmark_command_reproduces_the_real_baselines(real_fixtures: Path, skill) -> None:
    import_workspace([real_fixtures / "slow-powers" / skill])
    out, err = io.StringIO(), io.StringIO()

    call_command("benchmark", skill, "1", stdout=out, stderr=err)

    ours = json.loads(out.getvalue())
    jsonschema.Draft7Validator(SCHEMA).validate(ours)
    recorded = json.loads(
        (real_fixtures / "slow-powers" / skill / "evals/baseline/benchmark.json").read_text()
    )
    assert ours["delta"]["direction"] == recorded["delta"]["direction"]
    assert ours["delta"]["pass_rate"] == recorded["delta"]["pass_rate"]
    for condition, summary in recorded["run_summary"].items():
        assert ours["run_summary"][condition]["pass_rate"] == summary["pass_rate"]
        assert ours["run_summary"][condition].get("skill_invocation_rate") == summary.get(
            "skill_invocation_rate"
        )
    assert "recorded benchmark.json has them" in err.getvalue()


def test_the_benchmark_command_names_what_it_cannot_find(sample) -> None:
    with pytest.raises(CommandError, match="no skill named 'nope'"):
        call_command("benchmark", "nope", "1")
    with pytest.raises(CommandError, match="taming-flaky-tests has no iteration '9'"):
        call_command("benchmark", "taming-flaky-tests", "9")


def test_summaries_compare_treatment_with_control_and_say_so(sample) -> None:
    summary = summarise_iterations([iteration("taming-flaky-tests", 3)])[
        iteration("taming-flaky-tests", 3).pk
    ]

    assert (summary.treatment.name, summary.control.name) == ("with_skill", "without_skill")
    assert summary.delta.mean == pytest.approx(
        summary.treatment.score.mean - summary.control.score.mean
    )
    assert summary.verdict.startswith("with_skill beats without_skill by +0.47 (95% CI ")
    assert summary.verdict.endswith("though the permutation test cannot rule out chance")
    assert summary.delta.signal == "suggestive"
    assert summary.treatment.invocation.successes == summary.treatment.invocation.n == 6
    # The negative eval ran once with the skill and did not trigger it.
    assert (summary.treatment.false_trigger.successes, summary.treatment.false_trigger.n) == (0, 1)
    assert summary.control.invocation is None


def test_revision_mode_deltas_are_new_minus_old(sample) -> None:
    it = iteration("taming-flaky-tests", 4)

    summary = summarise_iterations([it])[it.pk]

    assert (summary.treatment.name, summary.control.name) == ("new_skill", "old_skill")
    # eval-magic records old − new = −0.131: the revision helped, so ours is positive.
    assert it.recorded_benchmark["delta"]["pass_rate"] < 0 < summary.delta.mean


def test_summaries_take_the_same_queries_for_one_or_many_iterations(sample) -> None:
    first, everything = list(Iteration.objects.all()[:1]), list(Iteration.objects.all())
    with CaptureQueriesContext(connection) as one:
        summarise_iterations(first)
    with CaptureQueriesContext(connection) as many:
        summarise_iterations(everything)

    assert len(one) == len(many) == 3


def test_a_single_condition_iteration_has_no_delta(tmp_path: Path) -> None:
    folder = eval_magic_iteration(
        tmp_path, conditions=["with_skill"], cells={("alpha", "with_skill"): [{"a": True}]}
    )
    import_workspace([folder])
    it = Iteration.objects.get()

    summary = summarise_iterations([it])[it.pk]

    assert summary.delta is None
    assert summary.verdict == "only with_skill ran: nothing to compare it with"
    with pytest.raises(ValueError, match="one condition"):
        eval_magic_benchmark(it)


def test_skill_creator_runs_without_meta_checks_have_unknown_invocation(sample) -> None:
    it = iteration("changelog-from-commits", 2)

    summary = summarise_iterations([it])[it.pk]

    assert summary.treatment.invocation is None
    assert summary.treatment.mean_tokens > 0
