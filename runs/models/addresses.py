"""Addresses: the number each iteration (and trigger iteration) of a skill answers to.

A number is handed out once per skill and kind, recorded here with the source it went to,
and never given to another source: deleting an iteration leaves its number in the ledger,
and importing the same source again gets the same number back. So every address
(`/skills/<s>/iterations/<n>/…`, a share link, the API) keeps naming the same results.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Max
from django.http import Http404
from django.utils import timezone

from .skills import Skill


class NumberMoved(Exception):
    """An address names a number whose source now answers to `number`: redirect there
    (evalsite.addresses turns this into a 301 for pages and the API alike)."""

    def __init__(self, *, kind: str, skill: str, old: int, number: int) -> None:
        super().__init__(f"{skill} {kind} #{old} is now #{number}")
        self.kind, self.skill, self.old, self.number = kind, skill, old, number


class IssuedNumberQuerySet(models.QuerySet):
    def issue(self, model: type[models.Model], *, skill: Skill, source_key: str, label: str) -> int:
        """The number for a new iteration of `skill` from `source_key`: the one this source
        had before, if it was ever imported and that number is free; else one past the highest
        number ever handed out for the skill (so a deleted iteration's number is never reused).
        `model` is Iteration or TriggerIteration (each numbered on its own)."""
        kind = model.NUMBER_KIND
        taken = model.objects.filter(skill=skill).values_list("number", flat=True)
        before = (
            self.filter(skill=skill, kind=kind, source_key=source_key)
            .exclude(number__in=taken)
            .order_by("-number")
            .first()
        )
        if before is not None:
            if before.label != label:
                before.label = label
                before.save(update_fields=["label"])
            return before.number
        highest = max(
            self.filter(skill=skill, kind=kind).aggregate(n=Max("number"))["n"] or 0,
            model.objects.filter(skill=skill).aggregate(n=Max("number"))["n"] or 0,
        )
        self.create(skill=skill, kind=kind, number=highest + 1, source_key=source_key, label=label)
        return highest + 1

    def missing(self, model: type[models.Model], *, skill: Skill, number: int) -> Exception:
        """Why `skill` has no `model` #`number`: NumberMoved when the source the ledger
        gave it to lives under another number now, else an Http404 saying whether the
        number was never handed out or its iteration was removed."""
        kind, noun = model.NUMBER_KIND, model._meta.verbose_name
        issued = self.filter(skill=skill, kind=kind, number=number).first()
        if issued is None:
            return Http404(f"{skill.name} has no {noun} #{number}.")
        now = (
            model.objects.filter(skill=skill, source_key=issued.source_key)
            .values_list("number", flat=True)
            .first()
        )
        if now is not None and now != number:
            return NumberMoved(kind=kind, skill=skill.name, old=number, number=now)
        held = f" ({issued.label})" if issued.label else ""
        return Http404(
            f"{skill.name} {noun} #{number}{held} was removed; its number is not given to "
            "another iteration."
        )


class IssuedNumber(models.Model):
    """One number handed out to a skill's iteration (or trigger iteration), and the source
    (`source_key`) it went to; kept after that iteration is deleted."""

    class Kind(models.TextChoices):
        ITERATION = "iteration", "iteration"
        TRIGGER = "trigger", "trigger iteration"

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="issued_numbers")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    number = models.PositiveIntegerField()
    source_key = models.CharField(max_length=600)
    #: What the number was given to, as a person reads it, for the "was removed" page.
    label = models.CharField(max_length=300, blank=True)
    issued_at = models.DateTimeField(default=timezone.now)

    objects = IssuedNumberQuerySet.as_manager()

    class Meta:
        ordering = ["skill_id", "kind", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["skill", "kind", "number"], name="issued_number_unique"
            ),
        ]
        indexes = [models.Index(fields=["skill", "kind", "source_key"])]

    def __str__(self) -> str:
        return f"{self.skill_id} {self.kind} #{self.number} → {self.source_key}"
