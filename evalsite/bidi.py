"""Bidirectional controls in what a page shows are made visible, never obeyed.

An agent's text (a final message, a tool call's arguments, a diff.patch, evidence) may hold
the embedding, override and isolate characters of "Trojan Source" (CVE-2021-42574), which
make a line display in another order than a program reads it: a command or a patch shown
as something harmless. Each one is replaced by its name, `<U+202E>`, as the last step of
every HTML or plain-text response rather than wherever agent text is rendered: Markdown, the
raw toggle, pretty-printed JSON, diff rows, search snippets, titles, the admin and the 404
page's reason all pass through here, and a new template cannot forget to. The site's own
templates never need these characters, and names (skills, evals, conditions) refuse them.

The left-to-right and right-to-left *marks* (U+200E, U+200F, U+061C) are kept: they only
nudge the neutral characters beside them, and Arabic and Hebrew text uses them as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import groupby

from django.http import HttpRequest, HttpResponse

from runs.names import BIDI_CONTROLS

#: The controls' UTF-8 bytes: UTF-8 never holds these byte sequences inside another
#: character, so the body is searched as it is, without decoding it. Grouped by their lead
#: bytes (`\xe2\x80[\xaa-\xae]|…`): three times faster than nine alternatives on a page full
#: of dashes and ellipses, which share the lead bytes (0.3 ms for 200 KB).
_ENCODED = re.compile(
    b"|".join(
        re.escape(lead) + b"[" + b"".join(encoded[-1:] for encoded in group) + b"]"
        for lead, group in groupby(
            sorted(char.encode() for char in BIDI_CONTROLS), key=lambda encoded: encoded[:-1]
        )
    )
)

#: What each control becomes in plain text, and escaped for HTML: `&lt;U+202E&gt;` holds no
#: quote, `<` or `>`, so it is inert in text, in attribute values and inside <script> alike.
_NAMES = {char.encode(): f"<U+{ord(char):04X}>".encode() for char in BIDI_CONTROLS}
_ESCAPED_NAMES = {
    char: name.replace(b"<", b"&lt;").replace(b">", b"&gt;") for char, name in _NAMES.items()
}

#: Pages (and fragments) and the plain-text view of one tool result; the API's JSON and
#: downloads keep the text as the agent wrote it.
_SHOWN_TYPES = {"text/html", "text/plain"}


def visible_controls(content: bytes, *, html: bool) -> bytes:
    """UTF-8 `content` with each bidirectional control replaced by its name (`<U+202E>`)."""
    names = _ESCAPED_NAMES if html else _NAMES
    return _ENCODED.sub(lambda match: names[match.group()], content)


class VisibleBidiControlsMiddleware:
    """`visible_controls` over every HTML and plain-text response the site sends."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.streaming  # static files and downloads: not agent text shown as a page
            or response.has_header("Content-Encoding")
            or response.charset.lower().replace("-", "") != "utf8"
        ):
            return response
        content_type = response.get("Content-Type", "").partition(";")[0].strip().lower()
        if content_type not in _SHOWN_TYPES or not _ENCODED.search(response.content):
            return response
        response.content = visible_controls(response.content, html=content_type == "text/html")
        if response.has_header("Content-Length"):
            response["Content-Length"] = str(len(response.content))
        return response
