"""The Celery app `runevals --queue` sends runs to: `celery -A evalsite worker`.

Configured from Django's settings (the CELERY_* names, e.g. CELERY_BROKER_URL), so a worker
reads the same environment and `.env` as gunicorn and manage.py.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

app = Celery("evalsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
