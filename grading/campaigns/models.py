"""Queued campaigns: what `runevals --queue` planned, and where each of its runs stands.

A campaign is one invocation over one or more skills; each skill gets one iteration (a
`QueuedIteration`, the iteration folder it will become), and each eval × condition × run a
`QueuedRun`, executed by whichever Celery worker takes it. The database is the record every
machine shares: a run is claimed, heartbeated and recorded here, keyed by its identity, so a
run delivered twice is still recorded once, and the iteration is finalised by exactly one
worker (a conditional update), once its last run is in.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.db.models import Count, Exists, F, Max, OuterRef, Q
from django.urls import reverse
from django.utils import timezone

from runs.models.fields import JSONField

if TYPE_CHECKING:
    from grading.evaluating.plan import RunPlan
    from grading.evaluating.runner import RunOutcome


def silent_since(now: datetime) -> datetime:
    """Heartbeats older than this are from a worker presumed lost: three missed beats."""
    return now - timedelta(seconds=3 * settings.EVALSITE_QUEUE_HEARTBEAT)


def forgotten_before(now: datetime) -> datetime:
    """A task sent before this and not yet acted on may have been lost with the broker's
    data (one it still held unacknowledged would have been delivered again by now)."""
    return now - timedelta(seconds=settings.EVALSITE_QUEUE_VISIBILITY_TIMEOUT)


class Campaign(models.Model):
    """One `runevals --queue SKILL…` invocation."""

    created_at = models.DateTimeField(auto_now_add=True)
    #: Who queued it: `runevals pid 123 on host`, shown where the lock is refused.
    requested_by = models.CharField(max_length=300)
    #: How every run is played: harness, sandbox, responder model, concurrency, keep_env.
    options = JSONField(default=dict)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"campaign #{self.pk}"

    def get_absolute_url(self) -> str:
        return reverse("campaigns:campaign", args=[self.pk])

    @property
    def finished(self) -> bool:
        """Every iteration imported, failed or abandoned: nothing left for a worker to do."""
        return not self.iterations.filter(state__in=QueuedIteration.ACTIVE).exists()

    def last_activity(self) -> datetime:
        """When it was queued, or a run of it was last claimed, signalled or recorded."""
        runs = QueuedRun.objects.filter(iteration__campaign=self)
        latest = runs.aggregate(beat=Max("heartbeat_at"), done=Max("finished_at"))
        return max(moment for moment in (self.created_at, *latest.values()) if moment)

    @property
    def stale(self) -> bool:
        """No run activity for EVALSITE_QUEUE_STALE_AFTER: its workers (or broker) are gone.

        The stale-lock rule: such a campaign no longer holds its skills."""
        idle = timezone.now() - self.last_activity()
        return idle > timedelta(seconds=settings.EVALSITE_QUEUE_STALE_AFTER)


class QueuedIterationQuerySet(models.QuerySet):
    def active(self) -> QueuedIterationQuerySet:
        """Iterations whose runs are still being played or whose import is under way."""
        return self.filter(state__in=QueuedIteration.ACTIVE)

    def unfinalised(self, now: datetime) -> QueuedIterationQuerySet:
        """Iterations whose finalise task must be sent (again): every run recorded three
        beats ago and none finalising it, or finalising by a worker silent for three beats,
        and no finalise task sent since (or only one the broker may have lost)."""
        silent, forgotten = silent_since(now), forgotten_before(now)
        runs = QueuedRun.objects.filter(iteration=OuterRef("pk"))
        recorded = (
            Q(state=QueuedIteration.State.RUNNING)
            & ~Exists(runs.exclude(state__in=QueuedRun.FINISHED))
            & ~Exists(runs.filter(finished_at__gte=silent))
        )
        recorded_since_sent = Exists(runs.filter(finished_at__gt=OuterRef("sent_at")))
        finaliser_silent = Q(state=QueuedIteration.State.FINALISING, finalising_at__lt=silent)
        never_or_long_ago = Q(sent_at__isnull=True) | Q(sent_at__lt=forgotten)
        return self.filter(
            recorded & (never_or_long_ago | recorded_since_sent)
            | finaliser_silent & (never_or_long_ago | Q(sent_at__lt=F("finalising_at")))
        )

    def with_counts(self) -> QueuedIterationQuerySet:
        """Each iteration with `done`, `errored`, `running` and `pending` run counts."""
        return self.annotate(
            **{
                state: Count("runs", filter=Q(runs__state=state))
                for state in QueuedRun.State.values
            }
        )


class QueuedIteration(models.Model):
    """One skill's iteration in a campaign: `<skill>/iteration-N/` in the run store."""

    class State(models.TextChoices):
        RUNNING = "running"
        FINALISING = "finalising"
        IMPORTED = "imported"
        FAILED = "failed"
        ABANDONED = "abandoned"

    ACTIVE = (State.RUNNING, State.FINALISING)

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="iterations")
    skill_name = models.CharField(max_length=200)
    label = models.CharField(max_length=200)  # iteration-N
    state = models.CharField(max_length=16, choices=State.choices, default=State.RUNNING)
    #: Plan.to_data(): every eval, condition and run, the models, the skill versions.
    plan = JSONField()
    #: Who is finalising it, and since when (taken over when that worker goes silent).
    finaliser = models.CharField(max_length=300, blank=True)
    finalising_at = models.DateTimeField(null=True, blank=True)
    #: The imported iteration, and runevals' summary of it (report.iteration_report).
    iteration = models.ForeignKey(
        "runs.Iteration", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    report = JSONField(null=True, blank=True)
    #: Why it failed (an import failure, a finaliser error), one line.
    error = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    #: When a finalise task was last sent for it (by --resume or the sweep), if ever.
    sent_at = models.DateTimeField(null=True, blank=True)

    objects = QueuedIterationQuerySet.as_manager()

    class Meta:
        ordering = ["campaign", "skill_name"]
        constraints = [
            # The per-skill lock, for every machine: one active queued iteration per skill.
            models.UniqueConstraint(
                fields=["skill_name"],
                condition=Q(state__in=["running", "finalising"]),
                name="one_active_queued_iteration_per_skill",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.skill_name} {self.label}"

    @property
    def store_key(self) -> str:
        """The iteration folder's place in the run store."""
        return f"{self.skill_name}/{self.label}"

    @property
    def internals_key(self) -> str:
        """Where the queue keeps what workers share besides the folder (skill, attempts)."""
        return f".queue/{self.skill_name}/{self.label}"

    @property
    def is_active(self) -> bool:
        return self.state in self.ACTIVE


class QueuedRunQuerySet(models.QuerySet):
    def lost(self, now: datetime) -> QueuedRunQuerySet:
        """Unfinished runs of running iterations whose task must be sent again: held by a
        worker silent for three beats and not sent since its last beat, or held by no live
        worker and sent so long ago that the broker may have lost the task."""
        silent = silent_since(now)
        unheld = Q(state=QueuedRun.State.PENDING) | Q(
            state=QueuedRun.State.RUNNING, heartbeat_at__lt=silent
        )
        return self.filter(iteration__state=QueuedIteration.State.RUNNING).filter(
            Q(state=QueuedRun.State.RUNNING, heartbeat_at__lt=silent, sent_at__lt=F("heartbeat_at"))
            | unheld & Q(sent_at__lt=forgotten_before(now))
        )


class QueuedRun(models.Model):
    """One eval × condition × run of a queued iteration, and where it stands."""

    class State(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        ERRORED = "errored"

    FINISHED = (State.DONE, State.ERRORED)

    iteration = models.ForeignKey(QueuedIteration, on_delete=models.CASCADE, related_name="runs")
    eval_id = models.CharField(max_length=200)
    condition = models.CharField(max_length=100)
    run_index = models.PositiveIntegerField()
    multi = models.BooleanField(default=False)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    #: The attempt now playing it, then the one whose files became the run (in the store).
    attempt = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=300, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    passed = models.PositiveIntegerField(null=True, blank=True)
    total = models.PositiveIntegerField(null=True, blank=True)
    tokens = models.BigIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)
    error = models.TextField(blank=True)
    #: When its play_run task was last sent: by runevals, a worker putting it back, the sweep.
    sent_at = models.DateTimeField(default=timezone.now)

    objects = QueuedRunQuerySet.as_manager()

    class Meta:
        ordering = ["iteration", "eval_id", "condition", "run_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["iteration", "eval_id", "condition", "run_index"],
                name="one_queued_run_per_identity",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.iteration} {self.plan_run().relpath}"

    def plan_run(self) -> RunPlan:
        # Imported here: every process loads this models module at start-up, and the
        # planner (with the importer and the graders behind it) costs 0.25 s to import.
        from grading.evaluating.plan import RunPlan

        return RunPlan(self.eval_id, self.condition, self.run_index, self.multi)

    def outcome(self) -> RunOutcome:
        """The recorded run as the runner reports it (progress lines, the summary's counts)."""
        # Imported here: the runner loads the Anthropic SDK (1.7 s, ~50 MB), which every
        # process that loads the models (the site, importworkspace) would otherwise pay.
        from grading.evaluating.runner import RunOutcome

        return RunOutcome(
            self.plan_run(),
            passed=self.passed,
            total=self.total,
            errored=(self.error or "errored") if self.state == self.State.ERRORED else None,
            tokens=self.tokens,
            calls=self.calls,
            seconds=self.seconds,
        )

    @property
    def attempt_key(self) -> str:
        """The store folder of the recorded attempt's files."""
        return f"{self.iteration.internals_key}/attempts/{self.attempt}"
