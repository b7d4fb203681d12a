"""Human review: notes on runs, and overrides of single assertion results.

An override never changes what the grader said (`AssertionResult.passed`): it records who,
when and why in a `Review`, sets `AssertionResult.override_passed`, and moves the grading's
pass counts (which every statistic reads) by the difference, keeping the graded summary in
`Grading.original_summary`. The iteration then carries a validity warning saying that its
statistics include overrides. Every note and override ends with `runs.changes.changed`, so
search and every cached page show it at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from runs.changes import changed
from runs.models import AssertionResult, Grading, Iteration, Review, Run

MAX_TEXT = 10_000


class ReviewError(ValueError):
    """A review that cannot be recorded; the message says why in one line."""


@dataclass(frozen=True)
class Overridden:
    review: Review
    #: Whether the statistics changed (False when the override repeats the current verdict).
    changed: bool


def _clean_text(text: str, what: str) -> str:
    text = (text or "").strip()
    if not text:
        raise ReviewError(f"a {what} needs some text")
    if len(text) > MAX_TEXT:
        raise ReviewError(f"a {what} is at most {MAX_TEXT} characters")
    return text


@transaction.atomic
def add_note(*, run: Run, author: AbstractBaseUser, text: str) -> Review:
    """Record a reviewer's note on a run."""
    review = Review.objects.create(
        run=run,
        kind=Review.Kind.NOTE,
        source=Review.Source.WEB,
        author=author,
        text=_clean_text(text, "note"),
        created_at=timezone.now(),
    )
    changed(runs=[run.pk])
    return review


@transaction.atomic
def override(
    *, result: AssertionResult, author: AbstractBaseUser, passed: bool, reason: str
) -> Overridden:
    """Override one assertion result with a reason; statistics use the new verdict."""
    reason = _clean_text(reason, "reason for an override")
    if result.is_meta:
        raise ReviewError(
            f"{result.assertion_id} is a meta result (skill invocation), which cannot be overridden"
        )
    # Lock the grading so two reviewers overriding at once cannot both move the counts.
    grading = Grading.objects.select_for_update().select_related("run").get(pk=result.grading_id)
    result = AssertionResult.objects.get(pk=result.pk)
    before = result.effective_passed
    review = Review.objects.create(
        run=grading.run,
        kind=Review.Kind.OVERRIDE,
        source=Review.Source.WEB,
        author=author,
        assertion_result=result,
        assertion_id=result.assertion_id,
        original_passed=before,
        overridden_passed=passed,
        text=reason,
        created_at=timezone.now(),
    )
    result.override_passed = None if passed == result.passed else passed
    result.save(update_fields=["override_passed"])
    verdict_changed = before != passed
    if verdict_changed:
        if grading.original_summary is None:
            grading.original_summary = {
                "passed": grading.passed,
                "failed": grading.failed,
                "total": grading.total,
                "pass_rate": grading.pass_rate,
            }
        step = 1 if passed else -1
        grading.passed = max(0, grading.passed + step)
        grading.failed = max(0, grading.failed - step)
        grading.pass_rate = grading.passed / grading.total if grading.total else 0.0
        grading.save(update_fields=["passed", "failed", "pass_rate", "original_summary"])
        Iteration.objects.filter(pk=grading.run.iteration_id).refresh_override_warnings()
    # Also when the figures stand: the eval and iteration pages list the new review.
    changed(runs=[grading.run_id])
    return Overridden(review=review, changed=verdict_changed)
