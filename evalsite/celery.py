"""The Celery app `runevals --queue` sends runs to, as `celery -A evalsite worker` finds it.

The app itself is the campaign queue's (grading/campaigns/celery_app.py); this module names
the settings it is configured from before it is created, as Celery's Django support reads
DJANGO_SETTINGS_MODULE then.
"""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

from grading.campaigns.celery_app import app  # noqa: E402  (after the settings are named)

__all__ = ["app"]
