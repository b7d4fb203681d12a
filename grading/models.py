"""The grading app keeps no models of its own.

Gradings, assertion results, grading history and reviews are the runs' evidence: the
importer writes them and every page reads them, so they live in `runs.models` (their tables
keep their `grading_` names). They are importable from here too, for code that grades.
"""

from __future__ import annotations

from runs.models import LOW_CONFIDENCE, AssertionResult, Grading, GradingHistory, Review

__all__ = ["LOW_CONFIDENCE", "AssertionResult", "Grading", "GradingHistory", "Review"]
