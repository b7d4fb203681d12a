"""Old addresses keep resolving: a number whose results answer to another number now is
answered with a 301 to the same address under the new number.

Views look iterations up by number through `get_by_number_or_404`, which raises
NumberMoved for such a number; this middleware (and the API's handler of the same
exception, evalsite/api.py) turns it into the redirect, so no view has code for it.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.urls import NoReverseMatch, reverse

from ..models import NumberMoved

#: Query parameters that name an iteration of the page's skill by number (compare's two
#: sides, the run diff's other iteration).
NUMBER_PARAMETERS = ("a", "b", "ib")


def _names(value: object, old: int) -> bool:
    """Whether `value` is the moved number as the views read it: "02", "2.0" and "+2" are
    #2 to an IntegerField, so they must be rewritten too, or the 301 points at itself."""
    try:
        return forms.IntegerField(required=False).clean(str(value)) == old
    except ValidationError:
        return False


def moved_address(request: HttpRequest, moved: NumberMoved) -> str:
    """The address asked for, with the moved number replaced wherever it names it."""
    match = request.resolver_match
    kwargs = dict(match.kwargs) if match is not None else {}
    if "number" in kwargs and _names(kwargs["number"], moved.old):  # the API's are str
        kwargs["number"] = moved.number
    try:
        path = reverse(match.view_name, kwargs=kwargs) if match is not None else request.path
    except NoReverseMatch:
        path = request.path
    pairs = [
        (key, str(moved.number) if key in NUMBER_PARAMETERS and _names(value, moved.old) else value)
        for key, values in request.GET.lists()
        for value in values
    ]
    # Several iterations side by side name theirs in one list: "3,5,7".
    pairs = [
        (key, ",".join(str(moved.number) if _names(n, moved.old) else n for n in value.split(",")))
        if key == "iterations"
        else (key, value)
        for key, value in pairs
    ]
    return path + (f"?{urlencode(pairs)}" if pairs else "")


class MovedNumberMiddleware:
    """Answer NumberMoved with a permanent redirect; a share link this browser opened for
    the old number follows the results to the new one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, NumberMoved):
            return None
        link = getattr(request, "share_link", None)
        if link is not None:
            link.follow(
                trigger=exception.kind == "trigger", old=exception.old, new=exception.number
            )
        return HttpResponsePermanentRedirect(moved_address(request, exception))
