"""Iterations of a skill and the conditions each compared."""

from __future__ import annotations

from django.db import models
from django.urls import reverse
from django.utils import timezone

from ..names import NameValidator
from ..warnings import ValidityWarning, without
from .addresses import IssuedNumber
from .choices import ROLE_CHOICES, Mode, SourceKind
from .fields import JSONField
from .skills import EvalCase, Skill

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

    def get_by_number_or_404(self, skill: Skill, number: int) -> Iteration:
        """The skill's iteration #`number`, light (the recorded documents load only if
        read); NumberMoved when its results answer to another number now, Http404 saying
        whether there never was one or it was removed."""
        try:
            return self.light().get(skill=skill, number=number)
        except Iteration.DoesNotExist:
            raise IssuedNumber.objects.missing(Iteration, skill=skill, number=number) from None

    def get_by_address_or_404(self, skill: str, number: int) -> Iteration:
        """The iteration an address names by skill name and number, light; Http404."""
        return self.get_by_number_or_404(Skill.objects.get_by_name_or_404(skill), number)

    def in_display_order(self) -> IterationQuerySet:
        """Oldest first by generation time (`position`), whatever their numbers."""
        return self.order_by("skill_id", "position", "number")

    def light(self) -> IterationQuerySet:
        """Iterations without their large recorded documents, for lists and trends."""
        return self.select_related("skill").defer(*LARGE_ITERATION_FIELDS, "skill__notes")

    def refresh_override_warnings(self) -> None:
        """Keep each iteration's "N assertion results overridden by reviewers" warning true
        (also after a re-import rewrote its warnings); the caller starts a new generation."""
        overridden = models.Q(runs__grading__results__override_passed__isnull=False)
        for iteration in self.select_for_update().only("validity_warnings"):
            # `override` stores None when a reviewer restores the grader's verdict, so every
            # non-null override_passed differs from `passed`.
            count = Iteration.objects.filter(pk=iteration.pk).aggregate(
                n=models.Count("runs__grading__results", filter=overridden)
            )["n"]
            warnings = without(iteration.validity_warnings, "overridden")
            if count:
                warnings.append(ValidityWarning("overridden", {"n": count}).as_json())
            Iteration.objects.filter(pk=iteration.pk).update(
                validity_warnings=warnings, updated_at=timezone.now()
            )

    def trend_of(self, skill: Skill) -> list[Iteration]:
        """The skill's iterations, oldest first, light, each holding `skill` (no join)."""
        iterations = list(
            self.filter(skill=skill).defer(*LARGE_ITERATION_FIELDS).in_display_order()
        )
        for iteration in iterations:
            iteration.skill = skill
        return iterations


class Iteration(models.Model):
    """One campaign on one skill. Its `number` is its address, handed out once when it is
    first imported (runs.models.addresses); `position` is where it stands among the skill's
    iterations by generation time, the order every list and trend shows."""

    #: Its numbers are handed out in the ledger under this kind.
    NUMBER_KIND = IssuedNumber.Kind.ITERATION

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="iterations")
    number = models.PositiveIntegerField()
    #: 1, 2, 3… by generation time among the skill's iterations; the importer keeps it.
    position = models.PositiveIntegerField(default=0)
    #: The source's own folder name ("iteration-4"); two workspaces may both have one.
    label = models.CharField(max_length=200)
    #: What tells it from another iteration of the skill with the same label (the folder its
    #: source sat in, else when it was generated); blank when no other has its label.
    label_context = models.CharField(max_length=200, blank=True)
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
    #: Warnings recorded by the source tool (benchmark.json) and found by the importer, as
    #: `runs.warnings` stores them: [{"code", "params", "message"}].
    validity_warnings = JSONField(default=list)
    missing_gradings = models.PositiveIntegerField(default=0)
    #: The source's own benchmark.json, kept as recorded (cross-check, don't trust).
    recorded_benchmark = JSONField(null=True, blank=True)
    #: Aggregates only the recorded benchmark has (a promoted baseline's duration/tokens).
    recorded_aggregates = JSONField(null=True, blank=True)
    #: conditions.json / BASELINE.md fields kept verbatim for provenance.
    provenance = JSONField(default=dict)
    skill_snapshot = models.TextField(blank=True)
    notes = models.TextField(blank=True)
    #: Findings files (stray-writes.json, guard-denials.json, …) kept as recorded.
    findings = JSONField(default=dict)
    #: skill-creator feedback.json status and other iteration-level extras.
    extra = JSONField(default=dict)
    #: Digest of every file the iteration was imported from; equal digest → skipped.
    content_hash = models.CharField(max_length=64)
    imported_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = IterationQuerySet.as_manager()

    class Meta:
        ordering = ["skill_id", "position", "number"]
        constraints = [
            models.UniqueConstraint(fields=["skill", "number"], name="iteration_unique_number"),
            models.UniqueConstraint(fields=["skill", "source_key"], name="iteration_unique_source"),
        ]
        indexes = [
            models.Index(fields=["skill", "generated_at"]),
            models.Index(fields=["skill", "position"]),
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

    @property
    def title(self) -> str:
        """ "#7 iteration-3 (ws-b)": its address, the label its folder had, and what tells it
        from another iteration with that label."""
        title = f"#{self.number} {self.label}" if self.label else f"#{self.number}"
        return f"{title} ({self.label_context})" if self.label_context else title

    def previous(self) -> Iteration | None:
        """The skill's iteration just before this one in display order (its light fields)."""
        return (
            Iteration.objects.filter(skill_id=self.skill_id, position__lt=self.position)
            .defer(*LARGE_ITERATION_FIELDS)
            .order_by("-position", "-number")
            .first()
        )


class Condition(models.Model):
    iteration = models.ForeignKey(Iteration, on_delete=models.CASCADE, related_name="conditions")
    name = models.CharField(max_length=100, validators=[NameValidator("condition")])
    role = models.CharField(max_length=16, choices=ROLE_CHOICES)
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
