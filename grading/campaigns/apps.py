"""The campaigns app: queued runevals campaigns, their tables labelled `campaigns`."""

from __future__ import annotations

from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "grading.campaigns"
    label = "campaigns"
    verbose_name = "Queued campaigns"
