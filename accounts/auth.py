"""How the JSON API knows who is calling: a bearer token, a session, or public read."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from ninja.security import HttpBearer, SessionAuth

from .models import ApiToken


class ApiTokenAuth(HttpBearer):
    """`Authorization: Bearer <token>` with one of the user's active API tokens."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        found = ApiToken.objects.select_related("user").find(token)
        if found is None or not found.user.is_active:
            return None
        found.touch()
        request.user = found.user
        return found.user


class BrowserSessionAuth(SessionAuth):
    """A logged-in browser session, with its CSRF token for writes.

    Only for requests that carry no bearer token and do have a session: otherwise ninja's
    SessionAuth checks CSRF first, so a bad token or no login answered 403 "CSRF check
    Failed" where 401 is the answer.
    """

    def __call__(self, request: HttpRequest) -> Any:
        if "Authorization" in request.headers or not request.user.is_authenticated:
            return None
        return super().__call__(request)


class PublicReadAuth(SessionAuth):
    """Lets anyone read when EVALSITE_PUBLIC_READ is on; reads only (writes never get here).

    A SessionAuth subclass so the OpenAPI document has a scheme to name; it never checks CSRF
    because it only ever answers GET requests.
    """

    def __init__(self) -> None:
        super().__init__(csrf=False)

    def __call__(self, request: HttpRequest) -> Any:
        if settings.EVALSITE_PUBLIC_READ and request.method in {"GET", "HEAD"}:
            return "public"
        return None


#: Writes: a token, or a logged-in session with its CSRF token.
WRITE_AUTH = [ApiTokenAuth(), BrowserSessionAuth(csrf=True)]
#: Reads: the same, or anyone when the site is opened for reading.
READ_AUTH = [ApiTokenAuth(), BrowserSessionAuth(csrf=True), PublicReadAuth()]


def docs_access(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The API's docs and OpenAPI document: for the site's readers, like every page."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.user.is_authenticated or settings.EVALSITE_PUBLIC_READ:
            return view(request, *args, **kwargs)
        return redirect_to_login(request.get_full_path())

    return wrapped
