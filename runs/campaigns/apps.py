from __future__ import annotations

from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "runs.campaigns"
    label = "campaigns"
    verbose_name = "Queued campaigns"
