"""The dashboard's cache generation: one row, a new token on every write.

Cached page regions (`{% cache %}` in the templates) are keyed on the token, as the
djangoproject.com dashboard keys its pages on a generation number; whatever writes what
the dashboard shows starts a new generation through `runs.changes.changed()`.
"""

from __future__ import annotations

import uuid

from django.db import models


class GenerationQuerySet(models.QuerySet):
    def current(self) -> Generation:
        """The generation of the dashboard's data now (one primary-key lookup)."""
        return self.filter(pk=1).first() or Generation(pk=1, token="none")

    def bump(self) -> None:
        """Start a new generation, so every cached page region is rendered afresh.

        Writes call it through `runs.changes.changed()`, last in their transaction, so the
        new generation commits with the data it describes and no page is cached in between.
        """
        token = uuid.uuid4().hex
        if not self.filter(pk=1).update(token=token):  # the row is gone after a flush
            self.update_or_create(pk=1, defaults={"token": token})


class Generation(models.Model):
    """The generation of everything the dashboard shows.

    It lives in the database, not in the cache. With the default per-process cache, a
    counter in the cache bumped by one gunicorn worker (or by a `manage.py` run, whose cache
    dies with it) would be seen by no other process, and each would go on serving its old
    pages; every process reads this row, and the bump commits with the data it describes.
    With REDIS_URL the cached regions are shared, and still keyed on this row. A random
    token rather than a counter, so that a restored backup or a flushed table never brings
    back a number whose pages are still cached.
    """

    #: How long a cached region may be kept: one of an old generation is never read again,
    #: and this lets the cache (Redis above all) drop it.
    CACHE_SECONDS = 24 * 3600

    token = models.CharField(max_length=32)

    objects = GenerationQuerySet.as_manager()

    def __str__(self) -> str:
        return self.token
