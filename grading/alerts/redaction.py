"""Secrets out of what alerts say: messages, recorded errors, log lines and warnings.

A webhook URL is its token, so every URL alerts may post to is a secret, as are the site's
own keys and the mail password; text that quotes one has it replaced by "…". Credentials in
a URL (`://user:pass@`) and Anthropic keys (`sk-ant-…`) are cut wherever they appear.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.conf import settings

from .config import settings_webhooks

HIDDEN = "…"
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@:]+:[^\s/@]*@")
_ANTHROPIC_KEY = re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")


def site_secrets() -> list[str]:
    """The values of the settings that are secrets (empty ones left out)."""
    names = ("SECRET_KEY", "ANTHROPIC_API_KEY", "EMAIL_HOST_PASSWORD")
    found = [str(getattr(settings, name, "") or "") for name in names]
    found += [url for _, url in settings_webhooks()]
    return [value for value in found if len(value) >= 4]


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` on one line, with every secret (the site's and `secrets`) replaced by "…"."""
    text = " ".join(str(text).split())
    for secret in sorted({*site_secrets(), *secrets}, key=len, reverse=True):
        if secret:
            text = text.replace(secret, HIDDEN)
    text = _URL_CREDENTIALS.sub(rf"\1{HIDDEN}@", text)
    return _ANTHROPIC_KEY.sub(HIDDEN, text)
