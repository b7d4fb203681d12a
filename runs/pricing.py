"""What tokens cost: a price table per model, in US dollars per million tokens.

The shipped table is Anthropic's public list prices (PRICES_SOURCE, as of PRICES_AS_OF);
`EVALSITE_PRICES` (JSON, read by settings through `parse_prices`) adds models or replaces
rows. A model the table does not name has no cost: pages say "no price for model X" and never
guess a number. The arithmetic here is pure; only `price_table` reads settings.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

PRICES_AS_OF = "2026-12-02"
PRICES_SOURCE = "https://docs.anthropic.com/en/docs/about-claude/pricing"
MILLION = 1_000_000


@dataclass(frozen=True)
class Price:
    """USD per million tokens: input, output, cache write (5-minute) and cache read."""

    input: float
    output: float
    cache_write: float
    cache_read: float


#: Anthropic's list prices (standard API, 5-minute cache writes), from each model's overview
#: page on platform.claude.com (the current ones) and the pricing page (the older ones).
#: Claude Sonnet 5.5's cache read is the rate after the cut of 2026-10-07 ($0.20 before).
#: Claude Haiku 5.5 is priced by prompt length: this is its band for prompts up to 100,000
#: tokens (longer prompts cost 5× as much), so a long-prompt run's cost is under-stated.
#: Claude Fable 5.1 is left out: its cache prices are not published beside its $10 / $50.
DEFAULT_PRICES: dict[str, Price] = {
    "claude-opus-5-5": Price(4.0, 20.0, 5.0, 0.20),
    "claude-opus-5": Price(5.0, 25.0, 6.25, 0.50),
    "claude-sonnet-5-5": Price(2.0, 10.0, 2.50, 0.10),
    "claude-sonnet-5": Price(2.0, 10.0, 2.50, 0.20),
    "claude-haiku-5-5": Price(0.10, 0.50, 0.125, 0.01),
    "claude-opus-4-6": Price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-5": Price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-1": Price(15.0, 75.0, 18.75, 1.50),
    "claude-opus-4": Price(15.0, 75.0, 18.75, 1.50),
    "claude-sonnet-4-6": Price(3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4-5": Price(3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4": Price(3.0, 15.0, 3.75, 0.30),
    "claude-3-7-sonnet": Price(3.0, 15.0, 3.75, 0.30),
    "claude-haiku-4-5": Price(1.0, 5.0, 1.25, 0.10),
    "claude-3-5-haiku": Price(0.80, 4.0, 1.0, 0.08),
    "claude-3-haiku": Price(0.25, 1.25, 0.30, 0.03),
}

#: A dated snapshot id or alias names the same model: claude-haiku-4-5-20251001, …-latest.
_SUFFIX = re.compile(r"-(\d{8}|latest)$")
_FIELDS = ("input", "output", "cache_write", "cache_read")


class PriceError(ValueError):
    """EVALSITE_PRICES is not what it should be; the message says where."""


def parse_prices(text: str) -> dict[str, Price]:
    """EVALSITE_PRICES: {"model": {"input": 3, "output": 15, "cache_write": 3.75,
    "cache_read": 0.3}, …}; every field a non-negative number."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise PriceError(f"EVALSITE_PRICES must be JSON: {exc}") from None
    if not isinstance(data, dict):
        raise PriceError("EVALSITE_PRICES must be a JSON object of model → prices")
    return {str(model): _price(model, row) for model, row in data.items()}


def _price(model: str, row: Any) -> Price:
    if not isinstance(row, dict) or set(row) != set(_FIELDS):
        raise PriceError(f"EVALSITE_PRICES[{model!r}] must have exactly {', '.join(_FIELDS)}")
    for name in _FIELDS:
        value = row[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise PriceError(
                f"EVALSITE_PRICES[{model!r}].{name} must be a non-negative number (USD per "
                f"million tokens), got {value!r}"
            )
    return Price(*(float(row[name]) for name in _FIELDS))


def price_table() -> dict[str, Price]:
    """The shipped prices with the site's EVALSITE_PRICES over them."""
    from django.conf import settings

    return {**DEFAULT_PRICES, **getattr(settings, "EVALSITE_PRICES", {})}


def price_of(model: str, table: dict[str, Price] | None = None) -> Price | None:
    """The model's price (a dated snapshot falls back to its family's row), or None."""
    table = price_table() if table is None else table
    if model in table:
        return table[model]
    return table.get(_SUFFIX.sub("", model)) if model else None


@dataclass(frozen=True)
class Tokens:
    """One run's (or a sum of runs') tokens by kind, as the Messages API reports them."""

    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(
            self.input + other.input,
            self.output + other.output,
            self.cache_write + other.cache_write,
            self.cache_read + other.cache_read,
        )


def tokens_of_usage(usage: dict[str, Any]) -> Tokens:
    """A Messages API `usage` object's tokens by kind (a missing or odd count is 0)."""

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return Tokens(
        count("input_tokens"),
        count("output_tokens"),
        count("cache_creation_input_tokens"),
        count("cache_read_input_tokens"),
    )


def cost_usd(price: Price, tokens: Tokens) -> float:
    """What `tokens` cost at `price`, in US dollars."""
    return (
        tokens.input * price.input
        + tokens.output * price.output
        + tokens.cache_write * price.cache_write
        + tokens.cache_read * price.cache_read
    ) / MILLION


def worst_case_usd(price: Price, total_tokens: int) -> float:
    """The most `total_tokens` of unknown kinds can cost: all at the dearest rate (output)."""
    return total_tokens * max(price.input, price.output, price.cache_write) / MILLION


def no_price(model: str) -> str:
    """What a page says instead of a number."""
    return f"no price for model {model}" if model else "no price: the model is not recorded"


def format_usd(amount: float | None) -> str:
    """$0.0042, $1.23, $1,234: cents once they mean something, four places below a cent."""
    if amount is None:
        return "–"
    if amount == 0:
        return "$0"
    if abs(amount) < 0.01:
        return f"${amount:.4f}"
    if abs(amount) < 1000:
        return f"${amount:,.2f}"
    return f"${amount:,.0f}"


ONLY_TOTALS = (
    "only a total token count was recorded: no cost, since splitting a total between the "
    "input and output prices would be a guess"
)


@dataclass(frozen=True)
class Cost:
    """What a group of runs (a condition, an iteration) cost, or why that is not known.

    `mean_usd` is per run priced; `total_usd` only when every run with tokens was priced,
    so a total never silently leaves runs out. `note` says what is missing, "" when nothing.
    """

    total_usd: float | None = None
    mean_usd: float | None = None
    priced_runs: int = 0
    note: str = ""


def group_cost(model: str, tokens: Tokens, *, priced_runs: int, runs_with_tokens: int) -> Cost:
    """The cost of runs whose kinds sum to `tokens` (`priced_runs` of them), out of
    `runs_with_tokens` that recorded any tokens at all."""
    if not runs_with_tokens and not priced_runs:
        return Cost(note="no tokens recorded")
    if not priced_runs:
        return Cost(note=ONLY_TOTALS)
    price = price_of(model)
    if price is None:
        return Cost(priced_runs=priced_runs, note=no_price(model))
    total = cost_usd(price, tokens)
    unpriced = runs_with_tokens - priced_runs
    if unpriced > 0:
        note = f"{unpriced} run(s) recorded only a total token count and are not priced"
        return Cost(None, total / priced_runs, priced_runs, note)
    return Cost(total, total / priced_runs, priced_runs)


def sum_costs(costs: list[Cost]) -> Cost:
    """The total of several groups' costs: known only when each one's total is."""
    if not costs:
        return Cost(note="no runs")
    missing = next((c.note for c in costs if c.total_usd is None), None)
    if missing is not None:
        return Cost(note=missing)
    runs = sum(c.priced_runs for c in costs)
    total = sum(c.total_usd or 0.0 for c in costs)
    return Cost(total, total / runs if runs else None, runs)


def cost_per_point(
    extra_usd_per_run: float | None, delta_points: float, *, significant: bool
) -> float | None:
    """Extra dollars a run per pass-rate point gained: only for a significant gain that costs
    more (a cheaper treatment, or a gain indistinguishable from noise, has no such price)."""
    if extra_usd_per_run is None or not significant or delta_points <= 0:
        return None
    if extra_usd_per_run <= 0:
        return None
    return extra_usd_per_run / delta_points


def run_cost(model: str, tokens: Tokens | None, *, total_tokens: int | None) -> Cost:
    """One run's cost: its tokens by kind at the model's price, or why there is none."""
    if tokens is None:
        return Cost(note=ONLY_TOTALS if total_tokens else "no tokens recorded")
    price = price_of(model)
    if price is None:
        return Cost(priced_runs=1, note=no_price(model))
    amount = cost_usd(price, tokens)
    return Cost(amount, amount, 1)
