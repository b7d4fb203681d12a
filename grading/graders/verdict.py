"""What every grader returns: one assertion's verdict, as grading.json records it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Verdict:
    """One assertion result: `{id, passed, evidence, confidence, grader}` in grading.json."""

    id: str
    passed: bool
    evidence: str
    confidence: float = 1.0
    #: The grader that gave it; blank when no grader knows the assertion's kind.
    grader: str = ""

    def as_json(self) -> dict[str, Any]:
        """The assertion result grading.json holds (no `grader` key when none graded it)."""
        result: dict[str, Any] = {
            "id": self.id,
            "passed": self.passed,
            "evidence": self.evidence,
            "confidence": self.confidence,
        }
        if self.grader:
            result["grader"] = self.grader
        return result
