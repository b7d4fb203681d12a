"""runevals' money: the dry run's estimate, `--max-cost` / `--max-tokens` stopping a campaign
(what finished imported, nothing lost, `--resume` finishing it) and each run's cost, counted
by hand at a test price of $1 per million input tokens and $10 per million output tokens."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError

from grading.evaluating.spending import SpendingLimit
from runs import pricing
from runs.models import Iteration, Run
from tests.fakeapi import FakeAnthropic, RecordedRequest

from .test_runevals import good_agent, make_skill, runevals

pytestmark = pytest.mark.django_db

MODEL = "claude-test-1"
#: Every call, agent's or judge's: 100k input tokens ($0.10) and 10k output ($0.10).
USAGE = {
    "input_tokens": 100_000,
    "output_tokens": 10_000,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}
PRICES = {MODEL: {"input": 1.0, "output": 10.0, "cache_write": 2.0, "cache_read": 0.5}}


def priced_agent(request: RecordedRequest) -> Any:
    return dataclasses.replace(good_agent(request), usage=USAGE)


@pytest.fixture
def workspace(tmp_path: Path, settings) -> Path:
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    settings.EVALSITE_API_MAX_RETRIES = 3
    settings.EVALSITE_API_TIMEOUT = 5
    settings.EVALSITE_PRICES = pricing.parse_prices(json.dumps(PRICES))
    return settings.EVALSITE_WORKSPACE_DIR


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    with FakeAnthropic(priced_agent) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield fake
    assert not fake.errors, fake.errors


def priced(*args: str) -> str:
    return runevals("--model", MODEL, "--judge-model", MODEL, "--concurrency", "1", *args)


def test_a_run_records_its_tokens_by_kind_and_the_summary_prices_them(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    output = priced(str(make_skill(tmp_path)))

    # Each run: two agent calls; write-notes' runs one judge call too. 10 calls × $0.20.
    assert "10 API calls" in output and "$2.00" in output
    run = Run.objects.get(eval_id="second-eval", condition__name="with_skill")
    assert (run.input_tokens, run.output_tokens) == (200_000, 20_000)
    assert (run.cache_write_tokens, run.cache_read_tokens) == (0, 0)
    assert run.total_tokens == 220_000
    timing = json.loads(
        (workspace / run.iteration.source_path / run.source_relpath / "timing.json").read_text()
    )
    assert timing["usage"]["output_tokens"] == 20_000


def test_max_cost_stops_dispatching_imports_what_finished_and_resume_completes_it(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    skill = make_skill(tmp_path)

    with pytest.raises(CommandError) as info:
        priced(str(skill), "--max-cost", "1")

    # The first run (write-notes, with the skill) cost $0.60; a second at about that much
    # would pass $1: nothing else starts.
    assert info.value.returncode == 1
    assert str(info.value) == (
        "budget stop: $0.60 spent, and 1 more run(s) at about $0.60 each would pass "
        "--max-cost $1.00; what finished is imported, --resume plays the rest"
    )
    folder = workspace / "demo" / "iteration-1"
    assert (folder / ".budget-stopped").read_text().startswith("budget stop: $0.60 spent")
    iteration = Iteration.objects.get()
    assert [(r.eval_id, r.condition.name) for r in iteration.runs.all()] == [
        ("write-notes", "with_skill")
    ]
    calls_before = len(api.message_requests)

    output = priced(str(skill), "--resume")

    assert len(api.message_requests) - calls_before == 2 + 2 + 2 + 1  # the three not played
    assert not (folder / ".budget-stopped").exists()
    assert Iteration.objects.count() == 1 and Run.objects.count() == 4
    assert "resumed" in output and "budget stop" not in output


def test_max_tokens_stops_the_same_way(tmp_path: Path, workspace: Path, api) -> None:
    with pytest.raises(CommandError) as info:
        priced(str(make_skill(tmp_path)), "--max-tokens", "500000")

    # write-notes' first run: 3 calls × 110k tokens; a second at about that would pass 500k.
    assert str(info.value) == (
        "budget stop: 330000 tokens spent, and 1 more run(s) at about 330000 each would "
        "pass --max-tokens 500000; what finished is imported, --resume plays the rest"
    )
    assert Run.objects.count() == 1


def test_a_budget_that_holds_changes_nothing(tmp_path: Path, workspace: Path, api) -> None:
    output = priced(str(make_skill(tmp_path)), "--max-cost", "5")

    assert "budget stop" not in output
    assert Run.objects.count() == 4
    assert not (workspace / "demo" / "iteration-1" / ".budget-stopped").exists()


def test_max_cost_for_an_unpriced_model_is_refused_before_any_call(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    with pytest.raises(CommandError) as info:
        priced(str(make_skill(tmp_path)), "--model", "claude-unknown-9", "--max-cost", "1")

    assert info.value.returncode == 2
    assert str(info.value) == (
        "--max-cost: no price for model claude-unknown-9; add a price to EVALSITE_PRICES"
    )
    assert not api.message_requests


def test_max_cost_with_queue_is_refused_in_one_line(tmp_path: Path, workspace: Path) -> None:
    with pytest.raises(CommandError) as info:
        priced(str(make_skill(tmp_path)), "--queue", "--max-cost", "1")

    assert str(info.value) == "--max-cost and --max-tokens are not available with --queue"


def test_dry_run_prints_the_estimated_cost_from_the_call_bounds(tmp_path: Path, workspace) -> None:
    output = priced(str(make_skill(tmp_path)), "--dry-run")

    # 4 runs: 4 agent calls at least, 4 × 50 at most, 2 judge calls. At 10k in / 1k out an
    # agent call costs $0.01 + $0.01 = $0.02; a judge call (5k / 0.5k) $0.01.
    assert (
        "Estimated cost: $0.10 to $4.02, assuming 10k input and 1k output tokens an agent "
        "call and 5k / 0.5k a judge call, no cache"
    ) in output


def test_dry_run_says_plainly_when_a_model_has_no_price(tmp_path: Path, workspace) -> None:
    output = runevals(str(make_skill(tmp_path)), "--dry-run", "--model", "claude-unknown-9")

    assert "Estimated cost: unknown, no price for model claude-unknown-9" in output


def test_the_limit_counts_runs_in_flight_at_the_mean_so_far() -> None:
    limit = SpendingLimit(max_usd=1.0)
    assert limit.refusal(in_flight=3) == ""  # nothing finished: nothing to estimate from
    limit.record(tokens=10, cost_usd=0.25)
    assert limit.refusal(in_flight=2) == ""  # 0.25 + 3 × 0.25 = 1.00: within
    assert limit.refusal(in_flight=3).startswith("budget stop: $0.25 spent, and 4 more")
    assert limit.refusal(in_flight=0)  # once stopped, stopped


def test_the_summary_says_why_a_campaign_has_no_cost(tmp_path: Path, workspace, api) -> None:
    output = runevals(str(make_skill(tmp_path)), "--model", "claude-unknown-9")

    assert "cost unknown: no price for model claude-unknown-9" in output
