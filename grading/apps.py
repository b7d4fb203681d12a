"""The grading app: no models of its own (gradings live in runs), its views and commands."""

from __future__ import annotations

from django.apps import AppConfig


class GradingConfig(AppConfig):
    name = "grading"
    verbose_name = "Grading"
