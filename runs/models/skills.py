"""Skills and the versions of their eval definitions."""

from __future__ import annotations

from django.db import models
from django.http import Http404
from django.urls import reverse

from ..names import NameValidator, findable
from .fields import JSONField


class SkillQuerySet(models.QuerySet):
    def get_by_name_or_404(self, name: str) -> Skill:
        """The skill called `name`; Http404 saying so when there is none."""
        try:
            if not findable(name):
                raise Skill.DoesNotExist
            return self.get(name=name)
        except Skill.DoesNotExist:
            raise Http404(f"No skill named “{name}”.") from None


class Skill(models.Model):
    name = models.CharField(max_length=200, unique=True, validators=[NameValidator("skill")])
    description = models.TextField(blank=True)
    #: The author's notes (a promoted baseline's NOTES.md), shown on the skill page.
    notes = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SkillQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("runs:skill", args=[self.name])


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
    definition = JSONField()
    name = models.CharField(max_length=300, blank=True)
    prompt = models.TextField(blank=True)
    expected_output = models.TextField(blank=True)
    #: [{"id", "type", "text"?, ...}] normalised across dialects.
    assertions = JSONField(default=list)
    skill_should_trigger = models.BooleanField(default=True)
    tags = JSONField(default=list)
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
