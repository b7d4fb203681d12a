"""Where a skill's alerts go (set by staff), and every message sent, delivered or not."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.db import models


def shown_url(url: str) -> str:
    """A webhook as it may be shown: its host only (`hooks.slack.com/…`), as the rest of an
    incoming-webhook URL is its token."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    return f"{host or 'a webhook'}/…"


class Destination(models.Model):
    """One place a skill's alerts are sent: a Slack-compatible or JSON webhook, or an address."""

    class Kind(models.TextChoices):
        SLACK = "slack", "Slack webhook"
        JSON = "json", "JSON webhook"
        EMAIL = "email", "E-mail"

    skill = models.ForeignKey("runs.Skill", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    #: The webhook URL (a secret: never shown whole) or the e-mail address.
    address = models.CharField(max_length=2000)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["kind", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["skill", "kind", "address"], name="one_alert_destination_per_address"
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.shown}"

    @property
    def is_webhook(self) -> bool:
        return self.kind != self.Kind.EMAIL

    @property
    def shown(self) -> str:
        """What pages, logs and errors say of it: a webhook's host, an e-mail address."""
        return shown_url(self.address) if self.is_webhook else self.address


class Delivery(models.Model):
    """One alert message to one destination, and how its delivery went."""

    class Status(models.TextChoices):
        DELIVERED = "delivered"
        FAILED = "failed"

    created_at = models.DateTimeField(auto_now_add=True)
    skill_name = models.CharField(max_length=200, db_index=True)
    #: regression, failed, budget_stopped or test.
    event = models.CharField(max_length=20)
    #: slack, json or email.
    channel = models.CharField(max_length=8)
    #: The destination as shown (a webhook's host only); "site" ones come from settings.
    destination = models.CharField(max_length=300)
    site_wide = models.BooleanField(default=False)
    #: The message's first line (what changed), secret-free.
    headline = models.CharField(max_length=500)
    status = models.CharField(max_length=10, choices=Status.choices)
    attempts = models.PositiveSmallIntegerField(default=0)
    #: Why the last attempt failed, one line, with no secret in it.
    last_error = models.CharField(max_length=500, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.event} alert of {self.skill_name} to {self.destination}: {self.status}"
