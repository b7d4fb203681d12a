"""Where a trend stops comparing like with like: the breaks between neighbouring iterations.

A delta of with_skill − without_skill (new-skill mode) and one of new_skill − old_skill
(revision mode) answer different questions; so do scores measured with another agent model,
another harness or another set of evals. Joining them by a line reads as a trend that is
not there, so the charts break their lines between two iterations where any of these
changes, draw a dotted line there and say what changed; the tables mark the row.

A field an iteration did not record (blank model or harness, no evals) is unknown, not a
change: it breaks nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .points import TrendPoint

#: What a break names, in this order, as its short label says it ("model changed").
KINDS = ("mode", "model", "harness", "evals")


@dataclass(frozen=True)
class Change:
    """One thing that differs between two neighbouring iterations, as text."""

    kind: str  # one of KINDS
    detail: str  # "agent model claude-haiku-4-5 → claude-sonnet-4-6"


@dataclass(frozen=True)
class Break:
    """The comparison changes just before `points[index]` (iteration `number`)."""

    index: int
    number: int
    changes: tuple[Change, ...]

    @property
    def label(self) -> str:
        """ "model changed", "model, harness changed": short enough to sit on a chart."""
        return f"{', '.join(c.kind for c in self.changes)} changed"

    @property
    def detail(self) -> str:
        """Every change spelled out, "; " between them (hover text and table rows)."""
        return "; ".join(c.detail for c in self.changes)

    @property
    def text(self) -> str:
        """ "#5: model changed (agent model a → b)": what a caption or table row says."""
        return f"#{self.number}: {self.label} ({self.detail})"


def comparison_breaks(points: Sequence[TrendPoint]) -> list[Break]:
    """Every break between neighbours of `points`, in their order (the order charted)."""
    breaks = []
    for index in range(1, len(points)):
        changes = changes_between(points[index - 1], points[index])
        if changes:
            breaks.append(Break(index, points[index].number, changes))
    return breaks


def changes_between(before: TrendPoint, after: TrendPoint) -> tuple[Change, ...]:
    """What makes `after`'s numbers not comparable with `before`'s; () when nothing does."""
    changes = []
    if before.mode and after.mode and before.mode != after.mode:
        changes.append(Change("mode", f"mode {before.mode} → {after.mode}"))
    if before.agent_model and after.agent_model and before.agent_model != after.agent_model:
        changes.append(Change("model", f"agent model {before.agent_model} → {after.agent_model}"))
    if before.harness and after.harness and before.harness != after.harness:
        changes.append(Change("harness", f"harness {before.harness} → {after.harness}"))
    # Identical sets are often one object (reading.skill shares them): skip comparing.
    if (
        before.evals is not after.evals
        and before.evals
        and after.evals
        and before.evals != after.evals
    ):
        changes.append(Change("evals", _eval_set_change(before.evals, after.evals)))
    return tuple(changes)


def _eval_set_change(before: frozenset[str], after: frozenset[str]) -> str:
    """ "eval set: 2 added, 1 removed (30 → 31 evals)": counts, as a set may hold hundreds."""
    parts = []
    if added := len(after - before):
        parts.append(f"{added} added")
    if removed := len(before - after):
        parts.append(f"{removed} removed")
    return f"eval set: {', '.join(parts)} ({len(before)} → {len(after)} evals)"


def segment_starts(breaks: Sequence[Break]) -> frozenset[int]:
    """The indices where a new segment of a line begins."""
    return frozenset(b.index for b in breaks)
