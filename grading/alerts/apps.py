"""The alerts app: where a skill's alerts go and what was delivered, tables labelled `alerts`."""

from __future__ import annotations

from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "grading.alerts"
    label = "alerts"
    verbose_name = "Alerts"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the check of the site-wide settings)
