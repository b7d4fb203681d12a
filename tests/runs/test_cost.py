"""Cost beside tokens, counted by hand: the price table, a run's, a condition's and an
iteration's cost on the pages and in the API, cost per pass-rate point, and the rules for an
unknown model and for runs that recorded only a total (no cost, never a guess).

The factory's agent model is claude-haiku-4-5: $1 input, $5 output, $1.25 cache write and
$0.10 cache read per million tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from runs import pricing
from runs.importing import import_workspace
from runs.models import Iteration, Run
from runs.reading.summaries import summarise_iterations
from tests.factories import eval_magic_iteration

T, C = "with_skill", "without_skill"
EVALS = ("e1", "e2", "e3", "e4")
#: A treatment run: 0.10 + 0.10 + 0.05 + 0.02 = $0.27. A control run: 0.05 + 0.05 = $0.10.
TREATMENT_USAGE = {
    "input_tokens": 100_000,
    "output_tokens": 20_000,
    "cache_creation_input_tokens": 40_000,
    "cache_read_input_tokens": 200_000,
}
CONTROL_USAGE = {"input_tokens": 50_000, "output_tokens": 10_000}


def test_a_price_times_tokens_by_hand() -> None:
    price = pricing.price_of("claude-haiku-4-5")
    tokens = pricing.tokens_of_usage(TREATMENT_USAGE)

    assert pricing.cost_usd(price, tokens) == pytest.approx(0.27)
    assert pricing.format_usd(0.27) == "$0.27" and pricing.format_usd(0.0017) == "$0.0017"


def test_the_default_agent_models_price_by_hand(settings) -> None:
    # claude-sonnet-5-5: $2 input, $10 output, $2.50 cache write, $0.10 cache read.
    price = pricing.price_of(settings.EVALSITE_AGENT_MODEL)
    assert price is not None, "runevals' default model must have a price"
    tokens = pricing.tokens_of_usage(TREATMENT_USAGE)
    # 0.1 M × 2 + 0.02 M × 10 + 0.04 M × 2.5 + 0.2 M × 0.1 = 0.20 + 0.20 + 0.10 + 0.02
    assert pricing.cost_usd(price, tokens) == pytest.approx(0.52)


def test_a_dated_model_id_takes_its_familys_price_and_an_unknown_one_none() -> None:
    assert pricing.price_of("claude-haiku-4-5-20251001") == pricing.price_of("claude-haiku-4-5")
    assert pricing.price_of("claude-unknown-9") is None
    assert pricing.no_price("claude-unknown-9") == "no price for model claude-unknown-9"


def test_prices_from_settings_add_models_and_bad_ones_say_where() -> None:
    table = pricing.parse_prices(
        '{"my-model": {"input": 2, "output": 4, "cache_write": 2.5, "cache_read": 0.2}}'
    )
    assert table == {"my-model": pricing.Price(2.0, 4.0, 2.5, 0.2)}
    with pytest.raises(pricing.PriceError, match=r"\['my-model'\]\.output must be a non-neg"):
        pricing.parse_prices(
            '{"my-model": {"input": 2, "output": -1, "cache_write": 0, "cache_read": 0}}'
        )
    with pytest.raises(pricing.PriceError, match="must have exactly input, output"):
        pricing.parse_prices('{"my-model": {"input": 2}}')
    with pytest.raises(pricing.PriceError, match="must be JSON"):
        pricing.parse_prices("{nope")


def test_a_total_alone_is_never_priced() -> None:
    cost = pricing.group_cost(
        "claude-haiku-4-5", pricing.Tokens(), priced_runs=0, runs_with_tokens=3
    )
    assert cost.total_usd is None and cost.mean_usd is None
    assert cost.note.startswith("only a total token count was recorded: no cost")


def test_a_group_with_some_runs_unpriced_has_a_mean_but_no_total() -> None:
    cost = pricing.group_cost(
        "claude-haiku-4-5",
        pricing.tokens_of_usage(CONTROL_USAGE),
        priced_runs=1,
        runs_with_tokens=2,
    )
    assert cost.total_usd is None and cost.mean_usd == pytest.approx(0.10)
    assert cost.note == "1 run(s) recorded only a total token count and are not priced"


def test_cost_per_point_only_for_a_significant_gain_that_costs_more() -> None:
    assert pricing.cost_per_point(0.17, 25.0, significant=True) == pytest.approx(0.0068)
    assert pricing.cost_per_point(0.17, 25.0, significant=False) is None
    assert pricing.cost_per_point(0.17, -10.0, significant=True) is None
    assert pricing.cost_per_point(-0.05, 25.0, significant=True) is None
    assert pricing.cost_per_point(None, 25.0, significant=True) is None


def write_priced(root: Path, *, model: str = "claude-haiku-4-5") -> Path:
    """Four evals, two runs each; the treatment passes everything, the control nothing."""
    cells = {}
    for eval_id in EVALS:
        cells[(eval_id, T)] = [{"a": True}, {"a": True}]
        cells[(eval_id, C)] = [{"a": False}, {"a": False}]
    folder = eval_magic_iteration(root, skill="priced", cells=cells)
    conditions = json.loads((folder / "conditions.json").read_text())
    (folder / "conditions.json").write_text(json.dumps({**conditions, "agent_model": model}))
    for timing in folder.glob("eval-*/*/run-*/timing.json"):
        usage = TREATMENT_USAGE if timing.parts[-3] == T else CONTROL_USAGE
        data = json.loads(timing.read_text())
        timing.write_text(json.dumps({**data, "total_tokens": None, "usage": usage}))
    return folder


@pytest.mark.django_db
def test_the_importer_keeps_the_tokens_by_kind(tmp_path: Path) -> None:
    import_workspace([write_priced(tmp_path)])

    run = Run.objects.filter(condition__name=T).first()
    assert (run.input_tokens, run.output_tokens) == (100_000, 20_000)
    assert (run.cache_write_tokens, run.cache_read_tokens) == (40_000, 200_000)
    assert run.total_tokens == 360_000  # no total in timing.json: the kinds' sum
    control = Run.objects.filter(condition__name=C).first()
    assert (control.cache_write_tokens, control.cache_read_tokens) == (0, 0)


@pytest.mark.django_db
def test_conditions_and_the_iteration_sum_their_runs_costs(tmp_path: Path) -> None:
    import_workspace([write_priced(tmp_path)])
    summary = summarise_iterations([Iteration.objects.get()])[Iteration.objects.get().pk]

    treatment, control = summary.treatment.cost, summary.control.cost
    assert treatment.total_usd == pytest.approx(8 * 0.27) and treatment.mean_usd == pytest.approx(
        0.27
    )
    assert control.total_usd == pytest.approx(8 * 0.10)
    assert summary.cost.total_usd == pytest.approx(8 * 0.27 + 8 * 0.10)
    assert summary.extra_cost_per_run == pytest.approx(0.17)
    # +100 points, significant: $0.17 more a run for 100 points.
    assert summary.delta.significant and summary.cost_per_point == pytest.approx(0.0017)


@pytest.mark.django_db
def test_the_pages_show_cost_beside_tokens(tmp_path: Path, client: Client) -> None:
    import_workspace([write_priced(tmp_path)])

    page = client.get("/skills/priced/iterations/1/").content.decode()
    assert "$0.27" in page and "$2.16 in all" in page and "$0.10" in page
    assert "$2.96 for 16 runs" in page
    assert "costs $0.17 more a run: $0.0017 a run per pass-rate point gained" in page
    skill_page = client.get("/skills/priced/").content.decode()
    assert "$0.27" in skill_page and "$0.10" in skill_page
    run = client.get("/skills/priced/iterations/1/evals/e1/with_skill/1/").content.decode()
    assert "100000 input, 20000 output, 40000 cache write, 200000 cache read" in run


@pytest.mark.django_db
def test_an_unknown_model_is_said_plainly(tmp_path: Path, client: Client) -> None:
    import_workspace([write_priced(tmp_path, model="claude-unknown-9")])

    page = client.get("/skills/priced/iterations/1/").content.decode()
    assert "no price for model claude-unknown-9" in page
    assert "per pass-rate point" not in page
    run = client.get("/skills/priced/iterations/1/evals/e1/with_skill/1/").content.decode()
    assert "no price for model claude-unknown-9" in run


@pytest.mark.django_db
def test_runs_with_only_a_total_show_no_cost(tmp_path: Path, client: Client) -> None:
    import_workspace([eval_magic_iteration(tmp_path, skill="totals")])  # total_tokens only

    page = client.get("/skills/totals/iterations/1/").content.decode()
    assert 'title="only a total token count was recorded: no cost' in page
    assert "$" not in page.split('id="evals"')[0].split("<main")[-1]


@pytest.mark.django_db
def test_the_api_gives_each_cost_and_the_breakdown(tmp_path: Path, client: Client) -> None:
    import_workspace([write_priced(tmp_path)])

    iteration = client.get("/api/skills/priced/iterations/1").json()
    treatment = next(c for c in iteration["conditions"] if c["name"] == T)
    assert treatment["cost"]["total_usd"] == pytest.approx(2.16)
    assert iteration["cost"]["total_usd"] == pytest.approx(2.96)
    assert iteration["cost_per_point"] == pytest.approx(0.0017)
    runs = client.get("/api/skills/priced/iterations/1/runs?condition=with_skill").json()
    first = runs["items"][0]
    assert first["tokens_by_kind"] == {
        "input": 100_000,
        "output": 20_000,
        "cache_write": 40_000,
        "cache_read": 200_000,
    }
    assert first["cost"]["total_usd"] == pytest.approx(0.27)
