"""Skills, eval definitions, iterations, conditions and runs (SPEC §2)."""

from __future__ import annotations

from django.db import models
from django.urls import reverse

from .names import NameValidator


class Mode(models.TextChoices):
    NEW_SKILL = "new-skill", "new skill"
    REVISION = "revision", "revision"


class Role(models.TextChoices):
    TREATMENT = "treatment", "treatment"
    CONTROL = "control", "control"
    OTHER = "other", "other"


#: Condition names whose role is fixed by the SPEC; anything else is "other".
CONDITION_ROLES: dict[str, str] = {
    "with_skill": Role.TREATMENT,
    "new_skill": Role.TREATMENT,
    "without_skill": Role.CONTROL,
    "old_skill": Role.CONTROL,
}


def role_for_condition(name: str) -> str:
    """The role of a condition name: treatment, control or other."""
    return CONDITION_ROLES.get(name, Role.OTHER)


class SourceKind(models.TextChoices):
    EVAL_MAGIC = "eval-magic", "eval-magic iteration"
    BASELINE = "eval-magic-baseline", "eval-magic promoted baseline"
    SKILL_CREATOR = "skill-creator", "skill-creator workspace"
    RUNEVALS = "runevals", "runevals"


class Skill(models.Model):
    name = models.CharField(max_length=200, unique=True, validators=[NameValidator("skill")])
    description = models.TextField(blank=True)
    #: The author's notes (a promoted baseline's NOTES.md), shown on the skill page.
    notes = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class EvalCase(models.Model):
    """One version of an eval's definition; a changed definition is a new row.

    Runs point at the version they ran, so a comparison can say "this eval changed".
    """

    class Origin(models.TextChoices):
        EVALS_JSON = "evals.json", "evals.json"
        EVAL_METADATA = "eval_metadata.json", "skill-creator eval_metadata.json"
        RESULTS = "results", "reconstructed from run records and gradings"

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="eval_cases")
    eval_id = models.CharField(max_length=200, validators=[NameValidator("eval")])
    #: sha256 of the canonical JSON of `definition`.
    fingerprint = models.CharField(max_length=64)
    origin = models.CharField(max_length=32, choices=Origin.choices)
    #: "eval-magic", "swl" or "skill-creator" for definitions read from evals.json.
    dialect = models.CharField(max_length=32, blank=True)
    definition = models.JSONField()
    name = models.CharField(max_length=300, blank=True)
    prompt = models.TextField(blank=True)
    expected_output = models.TextField(blank=True)
    #: [{"id", "type", "text"?, ...}] normalised across dialects.
    assertions = models.JSONField(default=list)
    skill_should_trigger = models.BooleanField(default=True)
    tags = models.JSONField(default=list)
    weight = models.FloatField(default=1.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["skill_id", "eval_id", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["skill", "eval_id", "fingerprint"], name="evalcase_unique_version"
            )
        ]

    def __str__(self) -> str:
        return f"{self.skill.name}/{self.eval_id} ({self.fingerprint[:8]})"


#: An iteration's recorded documents: large, and shown only on its own page.
LARGE_ITERATION_FIELDS = (
    "recorded_benchmark",
    "recorded_aggregates",
    "provenance",
    "skill_snapshot",
    "notes",
    "findings",
    "extra",
)


class IterationNotFound(LookupError):
    """No (single) iteration answers to what a command was given; str() is one line."""


class IterationQuerySet(models.QuerySet):
    def named(self, skill: str, given: str) -> Iteration:
        """The skill's iteration by evalsite's number (`4`) or the source's label
        (`iteration-4`), as commands take it; IterationNotFound says why not."""
        found = self.filter(skill__name=skill)
        if not found.exists():
            raise IterationNotFound(f"no skill named {skill!r}")
        matches = list(
            found.filter(number=int(given)) if given.isdigit() else found.filter(label=given)
        )
        if not matches:
            raise IterationNotFound(f"{skill} has no iteration {given!r}")
        if len(matches) > 1:
            numbers = ", ".join(str(m.number) for m in matches)
            raise IterationNotFound(
                f"{skill} has several iterations labelled {given!r} (numbers {numbers}); "
                "give the number"
            )
        return matches[0]

    def light(self) -> IterationQuerySet:
        """Iterations without their large recorded documents, for lists and trends."""
        return self.select_related("skill").defer(*LARGE_ITERATION_FIELDS, "skill__notes")

    def trend_of(self, skill: Skill) -> list[Iteration]:
        """The skill's iterations, oldest first, light, each holding `skill` (no join)."""
        iterations = list(
            self.filter(skill=skill).defer(*LARGE_ITERATION_FIELDS).order_by("number")
        )
        for iteration in iterations:
            iteration.skill = skill
        return iterations


class Iteration(models.Model):
    """One campaign on one skill; numbered 1, 2, 3… per skill in the order generated."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="iterations")
    number = models.PositiveIntegerField()
    #: The source's own folder name ("iteration-4"); two workspaces may both have one.
    label = models.CharField(max_length=200)
    #: The run label the author gave (conditions.json / BASELINE.md "Label").
    run_label = models.CharField(max_length=200, blank=True)
    #: What identifies this iteration across re-imports: kind, label and timestamp.
    source_key = models.CharField(max_length=400)
    source_kind = models.CharField(max_length=32, choices=SourceKind.choices)
    source_path = models.TextField(blank=True)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.NEW_SKILL)
    baseline = models.CharField(max_length=200, blank=True)
    agent_model = models.CharField(max_length=200, blank=True)
    judge_model = models.CharField(max_length=200, blank=True)
    harness = models.CharField(max_length=200, blank=True)
    generated_at = models.DateTimeField(null=True, blank=True)
    #: Warnings recorded by the source tool (benchmark.json) and found by the importer.
    validity_warnings = models.JSONField(default=list)
    missing_gradings = models.PositiveIntegerField(default=0)
    #: The source's own benchmark.json, kept as recorded (cross-check, don't trust).
    recorded_benchmark = models.JSONField(null=True, blank=True)
    #: Aggregates only the recorded benchmark has (a promoted baseline's duration/tokens).
    recorded_aggregates = models.JSONField(null=True, blank=True)
    #: conditions.json / BASELINE.md fields kept verbatim for provenance.
    provenance = models.JSONField(default=dict)
    skill_snapshot = models.TextField(blank=True)
    notes = models.TextField(blank=True)
    #: Findings files (stray-writes.json, guard-denials.json, …) kept as recorded.
    findings = models.JSONField(default=dict)
    #: skill-creator feedback.json status and other iteration-level extras.
    extra = models.JSONField(default=dict)
    #: Digest of every file the iteration was imported from; equal digest → skipped.
    content_hash = models.CharField(max_length=64)
    imported_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = IterationQuerySet.as_manager()

    class Meta:
        ordering = ["skill_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["skill", "number"], name="iteration_unique_number"),
            models.UniqueConstraint(fields=["skill", "source_key"], name="iteration_unique_source"),
        ]
        indexes = [
            models.Index(fields=["skill", "generated_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.skill.name} #{self.number} ({self.label})"

    def eval_name(self, eval_id: str) -> str:
        """What a person reads for one of its evals: its definition's name (skill-creator's
        `eval_name`), else the id, which stays in URLs."""
        name = (
            EvalCase.objects.filter(runs__iteration=self, eval_id=eval_id)
            .exclude(name="")
            .order_by("-created_at")
            .values_list("name", flat=True)
            .first()
        )
        return name or eval_id

    def get_absolute_url(self) -> str:
        return reverse("runs:iteration", args=[self.skill.name, self.number])


class Condition(models.Model):
    iteration = models.ForeignKey(Iteration, on_delete=models.CASCADE, related_name="conditions")
    name = models.CharField(max_length=100, validators=[NameValidator("condition")])
    role = models.CharField(max_length=16, choices=Role.choices)
    #: Order in the source's conditions_compared (0 first).
    position = models.PositiveSmallIntegerField(default=0)
    loads_skill = models.BooleanField(default=False)
    skill_path = models.TextField(blank=True)
    staged_skill_slug = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["iteration_id", "position", "name"]
        constraints = [
            models.UniqueConstraint(fields=["iteration", "name"], name="condition_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"


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


#: The columns of `RunQuerySet.cell_aggregates()`, in order.
CELL_FIELDS = (
    "iteration_id",
    "condition_id",
    "eval_id",
    "eval_case_id",
    "runs",
    "graded",
    "pass_sum",
    "errored",
    "zero_assertions",
    "invoked",
    "invocation_n",
    "called",
    "called_n",
    "tokens_sum",
    "tokens_n",
    "duration_sum",
    "duration_n",
)


class RunQuerySet(models.QuerySet):
    def cell_aggregates(self) -> models.QuerySet:
        """Per (iteration, condition, eval): run and grading counts, pass-rate, cost sums.

        One GROUP BY over runs joined to their gradings, as tuples in the order of
        CELL_FIELDS; errored runs count as runs but never in pass rates. The condition's and
        eval's own attributes are not grouped on: the caller fetches them once each. A
        covering index on runs (Meta.indexes) keeps this off the transcripts' pages.
        """
        # Aggregates over a grading's columns skip runs without one (LEFT JOIN NULLs), and
        # COUNT(column) counts non-null values: fewer conditions to evaluate on every row.
        counted = ~models.Q(status=RunStatus.ERRORED)
        return (
            self.order_by()
            .values("iteration_id", "condition_id", "eval_id", "eval_case_id")
            .annotate(
                runs=models.Count("id"),
                graded=models.Count("grading", filter=counted),
                pass_sum=models.Sum("grading__pass_rate", filter=counted),
                errored=models.Count("id", filter=models.Q(status=RunStatus.ERRORED)),
                zero_assertions=models.Count(
                    "grading", filter=counted & models.Q(grading__total=0)
                ),
                invoked=models.Count("id", filter=models.Q(grading__skill_invoked=True)),
                invocation_n=models.Count("grading__skill_invoked"),
                called=models.Count("id", filter=models.Q(skill_called=True)),
                called_n=models.Count("skill_called"),
                tokens_sum=models.Sum("total_tokens"),
                tokens_n=models.Count("total_tokens"),
                duration_sum=models.Sum("duration_ms"),
                duration_n=models.Count("duration_ms"),
            )
            .values_list(*CELL_FIELDS)
        )

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
    conversation = models.JSONField(default=list)
    #: run.json `tool_invocations`.
    tool_invocations = models.JSONField(default=list)
    #: len(conversation), kept so pages can say "200 events" without loading them.
    conversation_events = models.PositiveIntegerField(default=0)
    #: Everything else the run folder held: diff-scope, command checks, outputs list, …
    artifacts = models.JSONField(default=dict)
    total_tokens = models.BigIntegerField(null=True, blank=True)
    duration_ms = models.BigIntegerField(null=True, blank=True)
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
            # Covers cell_aggregates: SQLite keeps the transcripts inline in each run's row,
            # and reading them to reach the timing columns made a skill's trend 10x slower.
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
                ],
                include=["id"],
                name="run_cells_covering",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.eval_id}/{self.condition.name}/run-{self.run_index}"

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


# A model of this app kept in its own module (the cache generation), registered with these.
from .generation import Generation  # noqa: E402, F401
