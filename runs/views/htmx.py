"""What an htmx request asks of a view that serves a whole page and a part of it."""

from __future__ import annotations

from django.http import HttpRequest


def wants_fragment(request: HttpRequest) -> bool:
    """An htmx request for part of a page; not htmx restoring a page it has no copy of."""
    return bool(request.htmx) and not request.htmx.history_restore_request
