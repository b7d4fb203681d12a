"""`manage.py check` (and every command that runs checks) on the site-wide alert settings."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from .config import settings_webhooks
from .delivery import webhook_problem
from .models import shown_url


@checks.register("alerts")
def check_alert_settings(**kwargs: Any) -> list[checks.CheckMessage]:
    """An EVALSITE_ALERT_WEBHOOKS entry that is no http(s) URL, or a bad e-mail address."""
    from django.conf import settings

    problems: list[checks.CheckMessage] = []
    for _, url in settings_webhooks():
        if (problem := webhook_problem(url, resolve=False)) is not None:
            problems.append(
                checks.Error(
                    f"EVALSITE_ALERT_WEBHOOKS: {shown_url(url)}: {problem}", id="alerts.E001"
                )
            )
    for address in settings.EVALSITE_ALERT_EMAILS:
        try:
            validate_email(address)
        except ValidationError:
            problems.append(
                checks.Error(
                    f"EVALSITE_ALERT_EMAILS: {address!r} is not an e-mail address", id="alerts.E002"
                )
            )
    return problems
