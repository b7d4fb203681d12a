"""What the trend charts and their tables read about one iteration: plain frozen rows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypeVar

from ..roles import Role
from ..stats.rows import condition_role
from ..stats.scores import ConditionScore, PairedDelta, Proportion

#: The three verdicts of a delta, as the badges beside it say them (PairedDelta.signal).
Signal = Literal["significant", "suggestive", "noise"]
T = TypeVar("T")


@dataclass(frozen=True)
class ConditionPoint:
    """One condition's numbers in one iteration; None where there is nothing to show."""

    name: str
    role: Role = Role.OTHER
    score: float | None = None
    low: float | None = None
    high: float | None = None
    invocation: float | None = None
    invocation_low: float | None = None
    invocation_high: float | None = None
    mean_tokens: float | None = None
    mean_duration_ms: float | None = None

    @classmethod
    def from_stats(
        cls,
        name: str,
        *,
        score: ConditionScore | None = None,
        invocation: Proportion | None = None,
        mean_tokens: float | None = None,
        mean_duration_ms: float | None = None,
        role: Role | None = None,
    ) -> ConditionPoint:
        """Return the point for a condition from its statistics (role from its name)."""
        score_ci = score.interval if score else None
        invocation_ci = invocation.interval if invocation else None
        return cls(
            name=name,
            role=role or condition_role(name) or Role.OTHER,
            score=score.mean if score else None,
            low=score_ci.low if score_ci else None,
            high=score_ci.high if score_ci else None,
            invocation=invocation.rate if invocation else None,
            invocation_low=invocation_ci.low if invocation_ci else None,
            invocation_high=invocation_ci.high if invocation_ci else None,
            mean_tokens=mean_tokens,
            mean_duration_ms=mean_duration_ms,
        )


@dataclass(frozen=True)
class DeltaPoint:
    """treatment − control in one iteration, with its interval when there is one."""

    mean: float
    low: float | None = None
    high: float | None = None

    @classmethod
    def from_paired(cls, delta: PairedDelta | None) -> DeltaPoint | None:
        """Return the point for a paired delta, None for none."""
        if delta is None:
            return None
        ci = delta.interval
        return cls(delta.mean, ci.low if ci else None, ci.high if ci else None)


@dataclass(frozen=True)
class TrendPoint:
    """One iteration of a skill, as the trend charts see it.

    `signal` is the delta's verdict, the word its badge shows; `tool` the program that
    wrote the results ("skill-creator"), named where it records nothing to chart.
    `agent_model`, `harness` and `evals` (the eval ids it ran) say what its numbers were
    measured on: where they change between neighbours, the charts break their lines
    (charts.breaks). Blank means not recorded, which breaks nothing.
    """

    number: int
    label: str
    mode: str = ""
    conditions: tuple[ConditionPoint, ...] = ()
    delta: DeltaPoint | None = None
    signal: Signal = "noise"
    url: str = ""
    tool: str = ""
    agent_model: str = ""
    harness: str = ""
    evals: frozenset[str] = frozenset()
    generated_at: datetime | None = None

    @property
    def tick(self) -> str:
        """ "#3": the axis label, short enough for a hundred of them."""
        return f"#{self.number}"

    @property
    def heading(self) -> str:
        """ "#3 ask-about-env": evalsite's number, then the folder's label."""
        return f"#{self.number} {self.label}" if self.label else f"#{self.number}"


def finite_or_none(value: float | None) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def segments(values: Sequence[T | None]) -> list[list[tuple[int, T]]]:
    """Runs of consecutive non-None values, each as (index, value) pairs."""
    runs: list[list[tuple[int, T]]] = [[]]
    for index, value in enumerate(values):
        if value is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((index, value))
    return [run for run in runs if run]
