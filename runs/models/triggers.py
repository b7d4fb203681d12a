"""Trigger evals: does a skill's description make the agent load it (SPEC §3.5)?

A trigger iteration is one description tested on a set of queries, each run several times;
its queries hold the counts (or only the rate a result recorded), and runs, where evalsite
ran them, say which skill each run loaded. Numbers are assigned once per skill and never
change, so an address keeps naming the same iteration.
"""

from __future__ import annotations

from django.db import models
from django.urls import reverse

from .addresses import IssuedNumber
from .fields import JSONField
from .skills import Skill


class TriggerFormat(models.TextChoices):
    RUN_EVAL = "run_eval", "skill-creator run_eval.py"
    RUN_LOOP = "run_loop", "skill-creator run_loop.py"
    SKILL_EVAL = "skill_eval", "skill-eval tool"
    RATES = "rates", "query rates"
    ROUTING = "routing", "routing results"
    EVALSITE = "evalsite", "runevals --triggers"


class Split(models.TextChoices):
    NONE = "", "all"
    TRAIN = "train", "train"
    TEST = "test", "test"


class TriggerIterationQuerySet(models.QuerySet):
    def next_number(self, skill: Skill, *, source_key: str, label: str) -> int:
        """The number a new trigger iteration of `skill` from `source_key` gets: its old one
        if it had one, else one past the highest ever handed out (runs.models.addresses)."""
        return IssuedNumber.objects.issue(
            TriggerIteration, skill=skill, source_key=source_key, label=label
        )

    def get_by_address_or_404(self, skill: str, number: int) -> TriggerIteration:
        """The trigger iteration an address names; Http404 saying so when there is none."""
        return self.get_by_number_or_404(Skill.objects.get_by_name_or_404(skill), number)

    def get_by_number_or_404(self, skill: Skill, number: int) -> TriggerIteration:
        """`skill`'s trigger iteration #`number`; NumberMoved when its results answer to
        another number now, Http404 saying whether there never was one or it was removed."""
        found = self.filter(skill=skill, number=number).first()
        if found is None:
            raise IssuedNumber.objects.missing(TriggerIteration, skill=skill, number=number)
        found.skill = skill
        return found


class TriggerSet(models.Model):
    """A version of a skill's committed trigger queries (`evals/trigger-eval.json` and its
    kin): `queries` as [{"query", "should_trigger", "expected"?}], one row per content."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="trigger_sets")
    source_path = models.TextField(blank=True)
    fingerprint = models.CharField(max_length=64)
    queries = JSONField(default=list)
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["skill_id", "-imported_at"]
        constraints = [
            models.UniqueConstraint(fields=["skill", "fingerprint"], name="trigger_set_unique"),
        ]


class TriggerIteration(models.Model):
    """One description of a skill, tested on a set of queries."""

    #: Its numbers are handed out in the ledger under this kind.
    NUMBER_KIND = IssuedNumber.Kind.TRIGGER

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="trigger_iterations")
    number = models.PositiveIntegerField()
    #: What a person calls it: the result file (or run folder), with the loop step if any.
    label = models.CharField(max_length=300)
    #: What identifies it across re-imports: the file's path in its import and the step.
    source_key = models.CharField(max_length=600)
    source_path = models.TextField(blank=True)
    source_format = models.CharField(max_length=16, choices=TriggerFormat.choices)
    description = models.TextField(blank=True)
    #: False when the result did not record its description and SKILL.md's was taken.
    description_recorded = models.BooleanField(default=True)
    #: run_loop.py's history step, and whether the loop chose this description as best.
    loop_step = models.PositiveIntegerField(null=True, blank=True)
    is_best = models.BooleanField(default=False)
    threshold = models.FloatField(default=0.5)
    runs_per_query = models.PositiveIntegerField(null=True, blank=True)
    #: Skills staged beside it (routing among siblings), by name.
    siblings = JSONField(default=list)
    #: The version of the skill's trigger set its queries came from, where one was found.
    trigger_set = models.ForeignKey(
        TriggerSet, on_delete=models.SET_NULL, null=True, blank=True, related_name="iterations"
    )
    harness = models.CharField(max_length=200, blank=True)
    agent_model = models.CharField(max_length=200, blank=True)
    generated_at = models.DateTimeField(null=True, blank=True)
    validity_warnings = JSONField(default=list)
    #: The result's other top-level fields (exit_reason, holdout, best_score…), as recorded.
    provenance = JSONField(default=dict)
    content_hash = models.CharField(max_length=64)
    imported_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TriggerIterationQuerySet.as_manager()

    class Meta:
        ordering = ["skill_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["skill", "number"], name="trigger_unique_number"),
            models.UniqueConstraint(fields=["skill", "source_key"], name="trigger_unique_source"),
        ]

    def __str__(self) -> str:
        return f"{self.skill.name} trigger #{self.number} ({self.label})"

    def get_absolute_url(self) -> str:
        return reverse("runs:trigger", args=[self.skill.name, self.number])


class TriggerQuery(models.Model):
    """One query of a trigger iteration and what its runs did."""

    iteration = models.ForeignKey(
        TriggerIteration, on_delete=models.CASCADE, related_name="queries"
    )
    position = models.PositiveIntegerField()
    query = models.TextField()
    should_trigger = models.BooleanField()
    #: With siblings staged: the skill that should load ("" = this one; "none" = no skill).
    expected_skill = models.CharField(max_length=200, blank=True)
    split = models.CharField(max_length=8, choices=Split.choices, blank=True)
    triggers = models.PositiveIntegerField(null=True, blank=True)
    runs = models.PositiveIntegerField(null=True, blank=True)
    #: The rate as recorded, for results that kept no run counts.
    rate = models.FloatField(null=True, blank=True)
    recorded_pass = models.BooleanField(null=True, blank=True)
    #: Runs that timed out or failed: neither triggers nor misses.
    errors = models.PositiveIntegerField(default=0)
    #: Runs by the skill they loaded ("none" for none), where that was recorded.
    loaded = JSONField(null=True, blank=True)
    extra = JSONField(default=dict)

    class Meta:
        ordering = ["iteration_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["iteration", "position"], name="trigger_query_unique_position"
            ),
        ]


class TriggerOutcome(models.TextChoices):
    LOADED = "loaded", "loaded the skill"
    OTHER = "other", "loaded another skill"
    NONE = "none", "loaded no skill"
    TIMEOUT = "timeout", "timed out"
    ERROR = "error", "failed"


class TriggerRun(models.Model):
    """One run of one query, where evalsite ran it: which skill the agent loaded, if any."""

    query = models.ForeignKey(TriggerQuery, on_delete=models.CASCADE, related_name="run_records")
    run_index = models.PositiveIntegerField()
    outcome = models.CharField(max_length=8, choices=TriggerOutcome.choices)
    loaded_skill = models.CharField(max_length=200, blank=True)
    #: The first tool calls of the turn ({"name", "input"}), shown beside the outcome.
    tool_calls = JSONField(default=list)
    final_message = models.TextField(blank=True)
    error = models.TextField(blank=True)
    #: The run's conversation events as the harness recorded them, for the transcript page.
    events = JSONField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    total_tokens = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["query_id", "run_index"]
        constraints = [
            models.UniqueConstraint(fields=["query", "run_index"], name="trigger_run_unique_index"),
        ]
