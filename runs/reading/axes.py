"""A skill across harnesses and models: the axes page's matrix and trends, and the API's.

Iterations are grouped by (harness, agent model) as they recorded them (blank: not recorded),
within one mode: a new-skill delta (with − without) and a revision delta (new − old) answer
different questions and are never mixed. Each combination shows its latest iteration's
treatment − control delta, interval and verdict as every other page does (the summaries of
`reading.summaries`, the statistics of `runs.stats`), and its trend, a delta per iteration.
Read in the queries of `trend_points`, however many iterations there are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import charts
from ..charts.axes import axes_trend_figure
from ..models import Iteration, Mode, Skill
from ..stats import format_interval, signed
from .skill import trend_points
from .summaries import ConditionSummary, IterationSummary

NOT_RECORDED = "not recorded"


@dataclass
class Combination:
    """One harness × model of a skill in one mode: its iterations, oldest first."""

    harness: str
    model: str
    summaries: list[IterationSummary] = field(default_factory=list)
    points: list[charts.TrendPoint] = field(default_factory=list)

    @property
    def harness_label(self) -> str:
        return self.harness or NOT_RECORDED

    @property
    def model_label(self) -> str:
        return self.model or NOT_RECORDED

    @property
    def label(self) -> str:
        """ "claude-code · claude-sonnet-4-5": the legend's and the sentences' name."""
        return f"{self.harness_label} · {self.model_label}"

    @property
    def latest(self) -> IterationSummary:
        return self.summaries[-1]

    @property
    def iteration(self) -> Iteration:
        return self.latest.iteration

    @property
    def delta(self) -> Any:
        return self.latest.delta

    @property
    def verdict(self) -> str:
        return self.latest.verdict

    @property
    def treatment(self) -> ConditionSummary | None:
        return self.latest.treatment

    @property
    def runs(self) -> int:
        """The latest iteration's runs, every condition's."""
        return sum(c.runs for c in self.latest.conditions)

    @property
    def invocation(self) -> Any:
        """The treatment's skill-invocation rate where it was recorded, else None."""
        return self.treatment.invocation if self.treatment else None

    @property
    def direction(self) -> int:
        """+1 the skill significantly helps, −1 it significantly hurts, 0 neither."""
        delta = self.delta
        if delta is None or not delta.significant or delta.mean == 0:
            return 0
        return 1 if delta.mean > 0 else -1


@dataclass
class SkillAxes:
    """The axes page's data: the mode shown, its combinations, the matrix and the chart."""

    skill: Skill
    mode: str
    #: (mode, its label, iterations in it), for every mode the skill has iterations in.
    modes: list[tuple[str, str, int]]
    combinations: list[Combination]
    figure: dict[str, Any] = field(default_factory=dict)

    @property
    def harnesses(self) -> list[str]:
        return list(dict.fromkeys(c.harness for c in self.combinations))

    @property
    def models(self) -> list[str]:
        return sorted({c.model for c in self.combinations}, key=_blank_last)

    @property
    def rows(self) -> list[tuple[str, list[Combination | None]]]:
        """(harness, a combination or None per model), in the matrix's order."""
        by_key = {(c.harness, c.model): c for c in self.combinations}
        return [(h, [by_key.get((h, m)) for m in self.models]) for h in self.harnesses]

    @property
    def reference(self) -> Combination | None:
        """The combination the others are compared with: the first in the matrix."""
        return self.combinations[0] if self.combinations else None

    @property
    def sign_flip(self) -> SignFlip | None:
        """Where the skill significantly helps on some combinations and hurts on others."""
        helps = [c for c in self.combinations if c.direction > 0]
        hurts = [c for c in self.combinations if c.direction < 0]
        return SignFlip(helps, hurts) if helps and hurts else None


#: At most this many "compare" links under a sign flip.
MAX_FLIP_PAIRS = 6


@dataclass(frozen=True)
class SignFlip:
    """The effect's sign differs between combinations, significant on each one named."""

    helps: list[Combination]
    hurts: list[Combination]

    @property
    def sentence(self) -> str:
        return (
            f"The skill significantly helps on {_listed(self.helps)}, but significantly hurts "
            f"on {_listed(self.hurts)}: its effect depends on the harness and model, so "
            "measure it on the one you use."
        )

    @property
    def pairs(self) -> list[tuple[Combination, Combination]]:
        """(helps, hurts) pairs worth opening side by side: the largest gain against each
        loss, then the next; at most MAX_FLIP_PAIRS."""
        helps = sorted(self.helps, key=lambda c: -c.delta.mean)
        hurts = sorted(self.hurts, key=lambda c: c.delta.mean)
        return [(h, c) for h in helps for c in hurts][:MAX_FLIP_PAIRS]


def _listed(combinations: list[Combination]) -> str:
    named = [f"{c.label} ({_delta_text(c)})" for c in combinations]
    return named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"


def _delta_text(combination: Combination) -> str:
    delta = combination.delta
    text = f"Δ {signed(delta.mean)}"
    if delta.interval is not None:
        text += f", 95% CI {format_interval(delta.interval)}"
    return f"{text}, #{combination.iteration.number}"


def _blank_last(name: str) -> tuple[bool, str]:
    return (not name, name)


def combination_count(skill: Skill) -> int:
    """How many (harness, model) pairs the skill's iterations recorded: one query."""
    return (
        Iteration.objects.filter(skill=skill)
        .values_list("harness", "agent_model")
        .distinct()
        .count()
    )


def skill_axes(skill: Skill, *, mode: str | None = None) -> SkillAxes:
    """The skill's combinations in `mode` (default: the newest iteration's mode)."""
    points, summaries = trend_points(skill)
    counts: dict[str, int] = {}
    for summary in summaries:
        counts[summary.iteration.mode] = counts.get(summary.iteration.mode, 0) + 1
    labels = dict(Mode.choices)
    modes = [(m, labels.get(m, m), counts[m]) for m in labels if m in counts]
    if mode not in counts:
        mode = summaries[-1].iteration.mode if summaries else Mode.NEW_SKILL
    found: dict[tuple[str, str], Combination] = {}
    for point, summary in zip(points, summaries, strict=True):
        iteration = summary.iteration
        if iteration.mode != mode:
            continue
        key = (iteration.harness, iteration.agent_model)
        combination = found.setdefault(key, Combination(*key))
        combination.summaries.append(summary)
        combination.points.append(point)
    combinations = sorted(
        found.values(), key=lambda c: (_blank_last(c.harness), _blank_last(c.model))
    )
    shown = [p for p in points if p.mode == mode]
    figure = axes_trend_figure(shown, [(c.label, c.points) for c in combinations])
    return SkillAxes(skill, mode, modes, combinations, figure)
