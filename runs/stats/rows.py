"""Plain input rows for the statistics package, and the treatment/control roles.

Every function in `runs.stats` takes these rows (or mappings with the same keys, e.g. a
queryset's `.values()`), so the package needs neither the ORM nor Django settings. The
roles come from the one role table, `runs.roles`, plain Python too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..roles import Role, conditions_in_role, role_for_condition

TREATMENT_CONDITIONS = conditions_in_role(Role.TREATMENT)
CONTROL_CONDITIONS = conditions_in_role(Role.CONTROL)


def condition_role(condition: str) -> Role | None:
    """Treatment or control, or None for a condition name evalsite does not know."""
    role = role_for_condition(condition)
    return None if role is Role.OTHER else role


@dataclass(frozen=True)
class RunSample:
    """One (eval, condition, run index) of an iteration, reduced to what the statistics use.

    `pass_rate` is None when the run has no grading ("missing grading", not a failure).
    `skill_invoked` is `meta_summary.skill_invoked` of the grading, None when the grading has
    no meta_summary (negative evals, conditions without a skill). `invoked_in_transcript` is
    whether the transcript shows a `Skill` call naming the skill, None when not determined;
    it is what the false-trigger rate of negative evals is measured from.
    """

    eval_id: str
    condition: str
    run_index: int = 1
    pass_rate: float | None = None
    duration_ms: float | None = None
    total_tokens: float | None = None
    skill_invoked: bool | None = None
    invoked_in_transcript: bool | None = None

    @property
    def graded(self) -> bool:
        """Return whether the run has a grading."""
        return self.pass_rate is not None


@dataclass(frozen=True)
class AssertionOutcome:
    """One substantive assertion result of one run (meta assertions such as __skill_invoked
    are not outcomes)."""

    eval_id: str
    condition: str
    run_index: int
    assertion_id: str
    passed: bool


RunRow = RunSample | Mapping[str, Any]
OutcomeRow = AssertionOutcome | Mapping[str, Any]

_RUN_FIELDS = frozenset(f.name for f in fields(RunSample))
_OUTCOME_FIELDS = frozenset(f.name for f in fields(AssertionOutcome))


def as_run_samples(rows: Iterable[RunRow]) -> list[RunSample]:
    """Return the rows as RunSample objects; mappings may carry extra keys, which are ignored."""
    return [
        row
        if isinstance(row, RunSample)
        else RunSample(**{k: v for k, v in row.items() if k in _RUN_FIELDS})
        for row in rows
    ]


def as_assertion_outcomes(rows: Iterable[OutcomeRow]) -> list[AssertionOutcome]:
    """Return the rows as AssertionOutcome objects; mappings may carry extra keys."""
    return [
        row
        if isinstance(row, AssertionOutcome)
        else AssertionOutcome(**{k: v for k, v in row.items() if k in _OUTCOME_FIELDS})
        for row in rows
    ]
