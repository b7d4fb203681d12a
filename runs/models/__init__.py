"""Skills, eval definitions, iterations, conditions, runs and their gradings (SPEC §2).

One module per model family; everything is importable from `runs.models`.
"""

from __future__ import annotations

from ..generation import Generation
from .addresses import IssuedNumber, NumberMoved
from .choices import (
    CONDITION_ROLES,
    ROLE_CHOICES,
    Mode,
    Role,
    RunStatus,
    SourceKind,
    TimingSource,
    role_for_condition,
)
from .gradings import LOW_CONFIDENCE, AssertionResult, Grading, GradingHistory, Review
from .iterations import LARGE_ITERATION_FIELDS, Condition, Iteration, IterationNotFound
from .runs import Run
from .skills import EvalCase, Skill
from .triggers import (
    Split,
    TriggerFormat,
    TriggerIteration,
    TriggerOutcome,
    TriggerQuery,
    TriggerRun,
    TriggerSet,
)

__all__ = [
    "CONDITION_ROLES",
    "LARGE_ITERATION_FIELDS",
    "LOW_CONFIDENCE",
    "ROLE_CHOICES",
    "AssertionResult",
    "Condition",
    "EvalCase",
    "Generation",
    "Grading",
    "GradingHistory",
    "Iteration",
    "IssuedNumber",
    "IterationNotFound",
    "Mode",
    "NumberMoved",
    "Review",
    "Role",
    "Run",
    "RunStatus",
    "Skill",
    "Split",
    "SourceKind",
    "TimingSource",
    "TriggerFormat",
    "TriggerIteration",
    "TriggerOutcome",
    "TriggerQuery",
    "TriggerRun",
    "TriggerSet",
    "role_for_condition",
]
