"""Login required everywhere, except what a share link or the public-read setting opens."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.http import HttpRequest, HttpResponse

from .models import ShareLink

#: Session key holding the ids of the share links this browser has opened.
SESSION_KEY = "evalsite_share_links"

#: The URL namespace of the dashboard's read-only pages, the only ones a share link can open.
DASHBOARD = "runs"

#: The largest body a visitor who is not logged in may send: the login form's is under 1 KiB,
#: and a multipart body this small is parsed in memory (FILE_UPLOAD_MAX_MEMORY_SIZE), never
#: spooled to disk. Under WSGI (gunicorn, as deployed) nothing reads a body before this
#: check; under ASGI Django has read it already, and only the proxy's body limit helps.
ANONYMOUS_BODY_LIMIT = 64 * 1024


class AccessMiddleware(LoginRequiredMiddleware):
    """Django's LoginRequiredMiddleware, plus two ways in without an account.

    - A share link opened in this browser (its id is in the session) lets GET requests reach
      the dashboard views it covers; `request.share_link` is then set, and templates leave
      out every form.
    - `EVALSITE_PUBLIC_READ` lets anyone read the dashboard (for a private network).

    The API authenticates on its own (bearer token or session) and answers 401, not a redirect.

    It comes before CsrfViewMiddleware, which reads `request.POST` to find a form's token: for
    a multipart body that is parsing it and spooling every file to disk, for anyone holding a
    csrftoken cookie (every visitor is handed one). So a visitor without an account is turned
    away first, and the few views open to them (the login form) take only a body small enough
    to be parsed in memory. The API checks its token before it reads a body.
    """

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., HttpResponse],
        view_args: list[Any],
        view_kwargs: dict[str, Any],
    ) -> HttpResponse | None:
        request.share_link = None
        match = request.resolver_match
        if match is not None and match.namespace == "api":
            return None
        if request.user.is_authenticated:
            return None
        if not getattr(view_func, "login_required", True):
            return refuse_anonymous_body(request)
        if match is not None and match.namespace == DASHBOARD and request.method in {"GET", "HEAD"}:
            if settings.EVALSITE_PUBLIC_READ:
                return None
            link = shared_with(request, match.url_name, view_kwargs)
            if link is not None:
                request.share_link = link
                return None
        return super().process_view(request, view_func, view_args, view_kwargs)


def refuse_anonymous_body(request: HttpRequest) -> HttpResponse | None:
    """A 413, the body unread, when it is too large for a visitor without an account."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0  # what Django reads such a body as: empty
    if length <= ANONYMOUS_BODY_LIMIT:
        return None
    return HttpResponse(
        "Log in first: only an account may send files or large forms.",
        status=413,
        content_type="text/plain; charset=utf-8",
    )


def shared_with(request: HttpRequest, url_name: str, kwargs: dict[str, Any]) -> ShareLink | None:
    """The active share link opened in this session that covers the view, if any."""
    ids = request.session.get(SESSION_KEY) or []
    if not ids:
        return None
    query = {key: request.GET.get(key, "") for key in request.GET}
    # Checked against the database on every request, so revoking or expiring takes effect
    # at once, not when the session ends.
    for link in ShareLink.objects.active().filter(pk__in=ids):
        if link.covers(url_name, kwargs, query):
            link.touch()
            return link
    return None


def remember(request: HttpRequest, link: ShareLink) -> None:
    ids = [pk for pk in request.session.get(SESSION_KEY) or [] if pk != link.pk]
    # The newest first, and a bounded list: a session is not a store of every link ever opened.
    request.session[SESSION_KEY] = [link.pk, *ids][:50]
