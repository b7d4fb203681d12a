"""The site-wide alert settings as alerts use them (evalsite/settings.py reads the variables)."""

from __future__ import annotations

from django.conf import settings


def settings_webhooks() -> list[tuple[str, str]]:
    """(kind, URL) of each EVALSITE_ALERT_WEBHOOKS entry: `slack:URL`, `json:URL`, or a bare
    URL (a Slack one if its host is hooks.slack.com, else JSON)."""
    hooks = []
    for entry in getattr(settings, "EVALSITE_ALERT_WEBHOOKS", []):
        kind, _, rest = entry.partition(":")
        if kind in ("slack", "json") and not rest.startswith("//"):
            hooks.append((kind, rest.strip()))
        else:
            hooks.append(("slack" if "hooks.slack.com" in entry.lower() else "json", entry))
    return hooks
