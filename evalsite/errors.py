"""The site's own 404 page where Django would show its debug page (the quickstart try-out).

With DEBUG on, Django answers a 404 with its technical page (the URL patterns, the
exception) and never calls `handler404`. That page is for developers; someone trying
evalsite out with `quickstart` should meet the same page a deployed site shows.
`EVALSITE_STYLED_404` (which `manage.py quickstart` sets) turns this middleware on; a
developer running with plain DEBUG=1 keeps Django's page.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.template import loader


class StyledNotFoundMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not (settings.DEBUG and settings.EVALSITE_STYLED_404) or response.status_code != 404:
            return response
        if not response.get("Content-Type", "").startswith("text/html"):
            return response  # the API's JSON 404s are the API's
        if getattr(response, "evalsite_styled", False):
            return response
        return self.styled(request, getattr(request, "evalsite_not_found", ""))

    def process_exception(self, request: HttpRequest, exception: Exception) -> None:
        """Keep a view's own reason ("No skill named 'x'") for the page."""
        if isinstance(exception, Http404) and exception.args:
            request.evalsite_not_found = str(exception.args[0])  # type: ignore[attr-defined]

    @staticmethod
    def styled(request: HttpRequest, reason: str) -> HttpResponse:
        body = loader.render_to_string(
            "404.html", {"request_path": request.path, "exception": reason}, request
        )
        response = HttpResponse(body, status=404)
        response.evalsite_styled = True  # type: ignore[attr-defined]
        return response
