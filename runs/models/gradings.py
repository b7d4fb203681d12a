"""Gradings, assertion results and human reviews of runs (SPEC §2).

They are the runs' evidence, which the importer writes and every page and statistic reads,
so they live with the runs (grading → runs: the graders, regrade and review import them;
nothing in runs imports grading).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import models

from .fields import JSONField
from .runs import Run

#: Below this judge confidence a result needs a human to look at it.
LOW_CONFIDENCE = 0.7


class Grading(models.Model):
    """The grading of one run: summary as recorded (or computed when absent) and meta summary."""

    class Format(models.TextChoices):
        EVAL_MAGIC = "eval-magic", "eval-magic grading.json"
        SKILL_CREATOR = "skill-creator", "skill-creator grading.json"
        BENCHMARK = "benchmark", "skill-creator benchmark.json run entry"
        #: A run imported without a grading, graded afterwards by `manage.py regrade`.
        EVALSITE = "evalsite", "graded by evalsite after import"

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="grading")
    format = models.CharField(max_length=32, choices=Format.choices)
    passed = models.PositiveIntegerField()
    failed = models.PositiveIntegerField()
    total = models.PositiveIntegerField()
    pass_rate = models.FloatField()
    #: True when the source had no `summary` and evalsite computed it from the results.
    summary_computed = models.BooleanField(default=False)
    meta_passed = models.PositiveIntegerField(null=True, blank=True)
    meta_failed = models.PositiveIntegerField(null=True, blank=True)
    meta_total = models.PositiveIntegerField(null=True, blank=True)
    #: meta_summary.skill_invoked: True / False, or None when the run has no meta_summary.
    skill_invoked = models.BooleanField(null=True, blank=True)
    has_meta_summary = models.BooleanField(default=False)
    #: skill-creator extras kept verbatim: execution_metrics, timing, claims, user notes, …
    extra = JSONField(default=dict)
    #: The summary as graded, kept when a reviewer's override first changes the figures above
    #: (which the statistics read): {passed, failed, total, pass_rate}. None when never changed.
    original_summary = JSONField(null=True, blank=True)
    #: How evalsite last regraded this run (grading.regrading): {at, by, judge_models,
    #: assertion, regraded, kept, not_graded}. None while the grading is as imported.
    regraded = JSONField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["skill_invoked"])]

    def __str__(self) -> str:
        return f"{self.run}: {self.passed}/{self.total}"

    #: What a GradingHistory snapshot keeps of a grading and of each of its results.
    SNAPSHOT_FIELDS = (
        *("format", "passed", "failed", "total", "pass_rate", "summary_computed"),
        *("original_summary", "meta_passed", "meta_failed", "meta_total", "skill_invoked"),
        *("has_meta_summary", "extra", "regraded"),
    )
    SNAPSHOT_RESULT_FIELDS = (
        *("assertion_id", "is_meta", "position", "passed", "override_passed", "evidence"),
        *("confidence", "grader", "judge_model", "text"),
    )

    def snapshot(self, results: Iterable[AssertionResult] | None = None) -> dict[str, Any]:
        """The grading and its results as plain data, for GradingHistory."""
        results = self.results.all() if results is None else results
        return {
            **{name: getattr(self, name) for name in self.SNAPSHOT_FIELDS},
            "results": [
                {name: getattr(r, name) for name in self.SNAPSHOT_RESULT_FIELDS}
                for r in sorted(results, key=lambda r: (r.is_meta, r.position))
            ],
        }


class AssertionResult(models.Model):
    grading = models.ForeignKey(Grading, on_delete=models.CASCADE, related_name="results")
    assertion_id = models.CharField(max_length=300)
    #: Meta results (`__skill_invoked`) are tracked apart and never count in the pass rate.
    is_meta = models.BooleanField(default=False)
    position = models.PositiveIntegerField(default=0)
    passed = models.BooleanField()
    evidence = models.TextField(blank=True)
    confidence = models.FloatField(null=True, blank=True)
    grader = models.CharField(max_length=32, blank=True)
    #: The expectation's text, for skill-creator results whose id is a slug of it.
    text = models.TextField(blank=True)
    #: A reviewer's verdict replacing `passed` in every statistic (the latest override review);
    #: None when not overridden. `passed` always keeps what the grader said.
    override_passed = models.BooleanField(null=True, blank=True)
    #: The model that gave this verdict when evalsite asked a judge (regrade); blank for
    #: results imported as recorded. The importer inserts rows with raw SQL that does not
    #: name this column, hence the database default.
    judge_model = models.CharField(max_length=200, blank=True, default="", db_default="")

    class Meta:
        ordering = ["grading_id", "is_meta", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["grading", "is_meta", "assertion_id"], name="result_unique_assertion"
            )
        ]
        indexes = [models.Index(fields=["assertion_id"])]

    def __str__(self) -> str:
        return f"{self.assertion_id}: {'PASS' if self.passed else 'FAIL'}"

    @property
    def needs_review(self) -> bool:
        return self.confidence is not None and self.confidence < LOW_CONFIDENCE

    @property
    def effective_passed(self) -> bool:
        """The verdict the statistics use: the reviewer's override, else the grader's."""
        return self.passed if self.override_passed is None else self.override_passed

    @property
    def is_overridden(self) -> bool:
        return self.override_passed is not None and self.override_passed != self.passed


class GradingHistory(models.Model):
    """A run's grading as it was before `manage.py regrade` replaced it.

    The current grading is rewritten in place, so every page and statistic keeps reading
    `run.grading`; what it replaced is kept here whole: summary, results, overrides.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="grading_history")
    replaced_at = models.DateTimeField()
    #: What replaced it: {"by": "regrade", "judge_models": [...], "assertion": id or None}.
    replaced_by = JSONField(default=dict)
    format = models.CharField(max_length=32, choices=Grading.Format.choices)
    pass_rate = models.FloatField()
    #: The Grading row's fields and `results`, its AssertionResult rows, as they were.
    snapshot = JSONField()

    class Meta:
        ordering = ["run_id", "replaced_at", "id"]
        verbose_name_plural = "grading history"

    def __str__(self) -> str:
        return f"{self.run_id}: {self.pass_rate:.2f} until {self.replaced_at:%Y-%m-%d %H:%M}"


class Review(models.Model):
    """A person's note on a run, or a recorded override of one assertion result."""

    class Kind(models.TextChoices):
        NOTE = "note", "note"
        OVERRIDE = "override", "override"

    class Source(models.TextChoices):
        WEB = "web", "evalsite"
        FEEDBACK_JSON = "feedback.json", "skill-creator feedback.json"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="reviews")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.NOTE)
    source = models.CharField(max_length=32, choices=Source.choices, default=Source.WEB)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    #: The override's target; the original result row is never changed. A re-import that
    #: re-grades the run replaces its results: the review stays, as a record, with its
    #: `assertion_id`, and no longer counts.
    assertion_result = models.ForeignKey(
        AssertionResult, null=True, blank=True, on_delete=models.SET_NULL, related_name="overrides"
    )
    assertion_id = models.CharField(max_length=300, blank=True)
    #: What the result was before this override, and what the reviewer made it.
    original_passed = models.BooleanField(null=True, blank=True)
    overridden_passed = models.BooleanField(null=True, blank=True)
    text = models.TextField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["run_id", "created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind="note")
                | (~models.Q(assertion_id="") & models.Q(overridden_passed__isnull=False)),
                name="review_override_has_target",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} on {self.run}"
