"""The Celery app of the campaign queue: `runevals --queue` sends its tasks, and
`celery -A evalsite worker` (evalsite/celery.py hands it this app) plays them.

Configured from Django's settings (the CELERY_* names, e.g. CELERY_BROKER_URL), so a worker
reads the same environment and `.env` as gunicorn and manage.py. It lives beside the tasks
that bind to it, so sending one loads it without the project package, and only a process
that sends or plays tasks pays for importing Celery.
"""

from __future__ import annotations

from celery import Celery

#: startup.py is imported by a worker as it starts (its tasks are found by autodiscovery):
#: what it connects happens in workers only.
app = Celery("evalsite", include=["grading.campaigns.startup"])
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
