"""Runs: one (eval, condition, run index) of an iteration, and the queries over them."""

from __future__ import annotations

from django.db import models
from django.http import Http404
from django.urls import reverse

from ..names import NameValidator, findable
from ..pricing import Tokens
from .choices import RunStatus, TimingSource
from .fields import JSONField
from .iterations import Condition, Iteration
from .skills import EvalCase


class RunQuerySet(models.QuerySet):
    def get_by_address_or_404(
        self, skill: str, number: int, eval_id: str, condition: str, run_index: int
    ) -> Run:
        """The run a run page's URL names, with its grading, results, reviews and
        definition; Http404 naming what is missing."""
        iteration = Iteration.objects.get_by_address_or_404(skill, number)
        try:
            if not (findable(eval_id) and findable(condition)):
                raise Run.DoesNotExist
            return (
                self.select_related("condition", "grading", "eval_case", "iteration__skill")
                .prefetch_related("grading__results", "reviews__author")
                .get(
                    iteration=iteration,
                    eval_id=eval_id,
                    condition__name=condition,
                    run_index=run_index,
                )
            )
        except Run.DoesNotExist:
            raise Http404(
                f"Iteration #{number} of {skill} has no run {run_index} of “{eval_id}” "
                f"under {condition}."
            ) from None

    def for_eval_page(self, eval_id: str) -> RunQuerySet:
        """The eval's runs by condition, then run, with their gradings, results, reviews
        and definition; without the transcripts, which the page loads on demand."""
        return (
            self.filter(eval_id=eval_id)
            .select_related("condition", "grading", "eval_case")
            .prefetch_related("grading__results", "reviews__author")
            .defer("conversation", "tool_invocations")
            .order_by("condition__position", "condition__name", "run_index")
        )

    def samples(self) -> models.QuerySet:
        """One row per run: the `runs.stats.RunSample` fields, the condition as condition__name."""
        return self.order_by("eval_id", "condition__position", "run_index").values(
            "iteration_id",
            "eval_id",
            "run_index",
            "status",
            "duration_ms",
            "total_tokens",
            "condition__name",
            pass_rate=models.F("grading__pass_rate"),
            skill_invoked=models.F("grading__skill_invoked"),
            invoked_in_transcript=models.F("skill_called"),
        )


class Run(models.Model):
    """One (eval, condition, run index) of an iteration."""

    iteration = models.ForeignKey(Iteration, on_delete=models.CASCADE, related_name="runs")
    condition = models.ForeignKey(Condition, on_delete=models.CASCADE, related_name="runs")
    eval_case = models.ForeignKey(EvalCase, on_delete=models.RESTRICT, related_name="runs")
    #: Denormalised from eval_case so an iteration cannot hold one eval id twice per cell.
    eval_id = models.CharField(max_length=200, validators=[NameValidator("eval")])
    run_index = models.PositiveIntegerField(default=1)
    #: Where the run lives in its source, relative to the iteration ("eval-x/with_skill/run-2").
    source_relpath = models.CharField(max_length=500, blank=True)
    status = models.CharField(max_length=16, choices=RunStatus.choices)
    stop_reason = models.CharField(max_length=64, blank=True)
    prompt = models.TextField(blank=True)
    final_message = models.TextField(blank=True)
    #: conversation.json `events` (user/assistant messages and tool invocations).
    conversation = JSONField(default=list)
    #: run.json `tool_invocations`.
    tool_invocations = JSONField(default=list)
    #: len(conversation), kept so pages can say "200 events" without loading them.
    conversation_events = models.PositiveIntegerField(default=0)
    #: Everything else the run folder held: diff-scope, command checks, outputs list, …
    artifacts = JSONField(default=dict)
    total_tokens = models.BigIntegerField(null=True, blank=True)
    duration_ms = models.BigIntegerField(null=True, blank=True)
    #: The tokens by kind, where the source recorded them (runevals' timing.json `usage`);
    #: null where only a total is known, which cannot be priced (runs.pricing).
    input_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    cache_write_tokens = models.BigIntegerField(null=True, blank=True)
    cache_read_tokens = models.BigIntegerField(null=True, blank=True)
    timing_source = models.CharField(max_length=32, choices=TimingSource.choices, blank=True)
    #: Whether the transcript shows a `Skill` call naming the skill; None without a transcript.
    #: How invocation is known on negative evals, which carry no meta check.
    skill_called = models.BooleanField(null=True, blank=True)
    content_hash = models.CharField(max_length=64)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["iteration_id", "eval_id", "condition_id", "run_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["iteration", "eval_id", "condition", "run_index"], name="run_unique_cell"
            )
        ]
        indexes = [
            models.Index(fields=["iteration", "condition", "eval_id"]),
            models.Index(fields=["eval_case"]),
            # Covers runs.reading.rows.cell_aggregates: SQLite keeps the transcripts inline
            # in each run's row, and reading them to reach the timing columns made a skill's
            # trend 10x slower.
            # PostgreSQL also needs the id (the join to gradings) in the index for an
            # index-only scan; SQLite has it already (the rowid) and ignores `include`.
            models.Index(
                fields=[
                    "iteration",
                    "condition",
                    "eval_id",
                    "eval_case",
                    "status",
                    "total_tokens",
                    "duration_ms",
                    "skill_called",
                    *("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens"),
                ],
                include=["id"],
                name="run_cells_covering",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.eval_id}/{self.condition.name}/run-{self.run_index}"

    @property
    def eval_name(self) -> str:
        """What a person reads for its eval: the definition's name (skill-creator's
        `eval_name`), else the id, which stays in URLs."""
        return self.eval_case.name or self.eval_id

    def token_kinds(self) -> Tokens | None:
        """The run's tokens by kind, None where only a total (or nothing) was recorded."""
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return Tokens(
            self.input_tokens,
            self.output_tokens,
            self.cache_write_tokens or 0,
            self.cache_read_tokens or 0,
        )

    def get_absolute_url(self) -> str:
        """The run link; needs `iteration__skill` and `condition` loaded to avoid queries."""
        return reverse(
            "runs:run",
            args=[
                self.iteration.skill.name,
                self.iteration.number,
                self.eval_id,
                self.condition.name,
                self.run_index,
            ],
        )
