from __future__ import annotations

from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "runs.search"
    label = "search"
    verbose_name = "Search"
    default_auto_field = "django.db.models.BigAutoField"
