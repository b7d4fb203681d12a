"""What a campaign may spend: runevals' `--max-cost USD` and `--max-tokens N`.

One `SpendingLimit` is shared by every skill's runner in a campaign. Before each run is
dispatched the runner asks `refusal`: the campaign's spend so far, plus the runs still in
flight and the one about to start each estimated at the mean of the runs finished so far,
must stay within the limit. That is an estimate, not a worst case: a run's worst case (its
2M-token budget) would refuse any useful limit. Before any run has finished the estimate is 0,
so the first `--concurrency` runs always start; a run in flight is never stopped, so the
spend can pass the limit by what those runs cost above the estimate. Spend counts the agent's
and the judge's tokens, each at its own model's price (runs.pricing).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from runs import pricing


@dataclass
class SpendingLimit:
    max_usd: float | None = None
    max_tokens: int | None = None
    spent_usd: float = 0.0
    spent_tokens: int = 0
    finished: int = 0
    #: Why dispatching stopped (one line), "" while it has not.
    stopped: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def active(self) -> bool:
        return self.max_usd is not None or self.max_tokens is not None

    def record(self, *, tokens: int, cost_usd: float | None) -> None:
        """Count a finished run's spend (cost None: unpriced, refused before the start)."""
        with self._lock:
            self.finished += 1
            self.spent_tokens += tokens
            self.spent_usd += cost_usd or 0.0

    def refusal(self, *, in_flight: int) -> str:
        """Why the next run must not start ("" when it may); once refused, always refused."""
        with self._lock:
            if self.stopped or not self.active:
                return self.stopped
            runs = in_flight + 1
            if self.max_usd is not None:
                estimate = self.spent_usd / self.finished if self.finished else 0.0
                projected = self.spent_usd + runs * estimate
                if self.spent_usd >= self.max_usd or projected > self.max_usd:
                    self.stopped = (
                        f"budget stop: {pricing.format_usd(self.spent_usd)} spent, and "
                        f"{runs} more run(s) at about {pricing.format_usd(estimate)} each "
                        f"would pass --max-cost {pricing.format_usd(self.max_usd)}"
                    )
            if not self.stopped and self.max_tokens is not None:
                estimate_tokens = self.spent_tokens / self.finished if self.finished else 0.0
                projected_tokens = self.spent_tokens + runs * estimate_tokens
                if self.spent_tokens >= self.max_tokens or projected_tokens > self.max_tokens:
                    self.stopped = (
                        f"budget stop: {self.spent_tokens} tokens spent, and {runs} more "
                        f"run(s) at about {round(estimate_tokens)} each would pass "
                        f"--max-tokens {self.max_tokens}"
                    )
            return self.stopped


def unpriced_models(models: set[str]) -> list[str]:
    """The models among `models` the price table does not name, sorted."""
    return sorted(m for m in models if pricing.price_of(m) is None)
