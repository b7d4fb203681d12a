"""The choices the models' fields take (SPEC §2)."""

from __future__ import annotations

from django.db import models

from ..roles import CONDITION_ROLES, Role, role_for_condition

__all__ = [
    "CONDITION_ROLES",
    "ROLE_CHOICES",
    "Mode",
    "Role",
    "RunStatus",
    "SourceKind",
    "TimingSource",
    "role_for_condition",
]

#: `Condition.role`'s choices, from the one role table (runs.roles).
ROLE_CHOICES = [(role.value, role.value) for role in Role]


class Mode(models.TextChoices):
    NEW_SKILL = "new-skill", "new skill"
    REVISION = "revision", "revision"


class SourceKind(models.TextChoices):
    EVAL_MAGIC = "eval-magic", "eval-magic iteration"
    BASELINE = "eval-magic-baseline", "eval-magic promoted baseline"
    SKILL_CREATOR = "skill-creator", "skill-creator workspace"
    RUNEVALS = "runevals", "runevals"


class RunStatus(models.TextChoices):
    COMPLETED = "completed", "completed"
    STOPPED = "stopped", "stopped"
    TIMED_OUT = "timed_out", "timed out"
    ERRORED = "errored", "errored"


class TimingSource(models.TextChoices):
    COMPLETION_EVENT = "completion-event", "completion event"
    TRANSCRIPT = "transcript", "transcript"
    SKILL_CREATOR = "skill-creator", "skill-creator timing.json"
    BENCHMARK = "benchmark", "recorded benchmark.json"
    NONE = "", "not recorded"
