"""Submitting the admin's change forms as a browser does, for tests of what an edit changes."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from django.test import Client
from django.urls import reverse


class ChangeForm(HTMLParser):
    """An admin change form's fields as a browser submits them, unchanged."""

    def __init__(self) -> None:
        super().__init__()
        self.data: dict[str, str | list[str]] = {}
        self._in_form = False
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "form" and found.get("id", "").endswith("_form"):
            self._in_form = True
        name = found.get("name")
        if not self._in_form or not name and tag != "option":
            return
        kind = found.get("type", "text")
        if tag == "input" and kind in ("checkbox", "radio"):
            if "checked" in found:
                self.data[name] = found.get("value") or "on"
        elif tag == "input" and kind not in ("submit", "button", "file"):
            self.data[name] = found.get("value", "")
        elif tag == "select":
            self._select = name
        elif tag == "option" and self._select and "selected" in found:
            self.data[self._select] = found.get("value", "")
        elif tag == "textarea":
            self._textarea = name
            self.data[name] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None
        elif tag == "form":
            self._in_form = False

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.data[self._textarea] += data


def admin_save(client: Client, obj: object, **changes: str) -> None:
    """Change fields of `obj` on its admin page and save, as a person would."""
    meta = obj._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
    form = ChangeForm()
    form.feed(client.get(url).content.decode())
    # Browsers drop the newline a <textarea> starts with; Django writes one.
    data = {k: v.removeprefix("\n") if isinstance(v, str) else v for k, v in form.data.items()}
    response = client.post(url, {**data, **changes, "_save": "Save"})
    errors = re.findall(r'<ul class="errorlist[^>]*>(.*?)</ul>', response.content.decode(), re.S)
    assert response.status_code == 302, errors
