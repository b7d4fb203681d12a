"""What a regrade reports, and the errors it raises (see `grading.regrading`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Progress = Callable[[int, int, str], None]


class RegradeError(ValueError):
    """What regrade was asked cannot be done; the message says why in one line."""


class JudgeNeeded(RegradeError):
    """Judge assertions would be asked, but there is no client (no ANTHROPIC_API_KEY)."""


class JudgeFailed(RegradeError):
    """A judge call failed after the client's retries; nothing was saved."""


@dataclass
class RegradeReport:
    """What a regrade did: runs graded (had none), regraded, skipped, and why, per kind."""

    iteration: str
    judge_model: str
    graded: int = 0
    regraded: int = 0
    skipped: int = 0
    judge_calls: int = 0
    judge_tokens: int = 0
    #: (assertion kind or subject, reason) → runs; rendered by `notes`.
    reasons: Counter[tuple[str, str]] = field(default_factory=Counter)

    def note(self, subject: str, reason: str) -> None:
        self.reasons[(subject, reason)] += 1

    @property
    def notes(self) -> list[str]:
        """One line per assertion kind and reason, e.g. "command_check: 12 run(s) kept …"."""
        return [f"{subject}: {n} run(s) {reason}" for (subject, reason), n in self.reasons.items()]

    def summary(self) -> str:
        calls = f"{self.judge_calls} judge call(s)"
        if self.judge_calls:
            calls += f" ({self.judge_tokens} tokens)"
        return (
            f"Regraded {self.iteration}: {self.graded} graded, {self.regraded} regraded, "
            f"{self.skipped} skipped; {calls}, judge {self.judge_model}"
        )


@dataclass
class Planned:
    """One run's new grading, computed before anything is written."""

    run_id: int
    content_hash: str
    grading_id: int | None  # the grading it was computed from; None: the run had none
    #: Every result of the new grading in order: a regraded one carries `regraded: True`,
    #: one kept as recorded is only its key (`is_meta`, `id`).
    results: list[dict[str, Any]]
