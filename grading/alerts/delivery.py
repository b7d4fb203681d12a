"""Sending an alert: to each of its skill's destinations and the site's, retried, recorded.

Webhooks are POSTed with urllib (short timeouts, no redirects followed), e-mail goes through
Django's mail settings. Each destination gets a few attempts with a short backoff; a
receiver's 4xx (but 408 and 429) is not tried again. Every message is recorded as a
Delivery, and nothing here raises: a failed delivery is a one-line warning, never a failed
campaign. Errors are recorded and shown with every secret cut (redaction.py).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import DatabaseError
from django.utils import timezone

from .config import settings_webhooks
from .messages import Alert, email_message, json_payload, slack_payload
from .models import Delivery, Destination, shown_url
from .redaction import redact

log = logging.getLogger(__name__)

#: Receiver answers worth another attempt; any other 4xx will not change by retrying.
RETRIED_STATUSES = {408, 429}


class Undeliverable(Exception):
    """This destination cannot take the message (a refused URL, a 4xx): not tried again."""


@dataclass(frozen=True)
class Target:
    """Where one message goes: a destination row, or one from the site's settings."""

    kind: str
    address: str
    site_wide: bool = False

    @property
    def shown(self) -> str:
        return self.address if self.kind == Destination.Kind.EMAIL else shown_url(self.address)

    @property
    def secrets(self) -> list[str]:
        """What of the address must never be shown: a webhook's URL, path and query."""
        if self.kind == Destination.Kind.EMAIL:
            return []
        parts = urlsplit(self.address)
        return [self.address, parts.path, parts.query, parts.password or ""]


def site_targets() -> list[Target]:
    """The site's destinations: EVALSITE_ALERT_WEBHOOKS, then EVALSITE_ALERT_EMAILS."""
    found = [Target(kind, url, site_wide=True) for kind, url in settings_webhooks()]
    return found + [
        Target("email", address, site_wide=True)
        for address in getattr(settings, "EVALSITE_ALERT_EMAILS", [])
    ]


def targets_for(skill: str, *, site_wide: bool = True) -> list[Target]:
    """The site's destinations (unless not `site_wide`), then the skill's own."""
    found = site_targets() if site_wide else []
    rows = Destination.objects.filter(skill__name=skill).values_list("kind", "address")
    found += [Target(kind, address) for kind, address in rows]
    return list(dict.fromkeys(found))  # one message per destination, even if set twice


def webhook_problem(url: str, *, resolve: bool = True) -> str | None:
    """Why alerts may not be posted to `url`, or None: only http(s), and (unless
    EVALSITE_ALERT_ALLOW_LINK_LOCAL) no link-local address, where cloud metadata services
    answer. With `resolve`, the host's addresses are looked up and checked too."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError:
        return "not a valid URL"
    if any(char.isspace() or ord(char) < 32 for char in url):
        return "a webhook URL has no spaces or control characters"
    if parts.scheme not in ("http", "https"):
        return "a webhook URL starts with https:// (or http://)"
    if not host:
        return "a webhook URL names a host"
    if getattr(settings, "EVALSITE_ALERT_ALLOW_LINK_LOCAL", False):
        return None
    addresses = [host]
    if resolve:
        try:
            addresses = [info[4][0] for info in socket.getaddrinfo(host, None)]
        except (OSError, UnicodeError):
            return None  # the delivery itself says it cannot reach the host
    for address in addresses:
        try:
            ip = ipaddress.ip_address(address.split("%")[0])
        except ValueError:
            continue
        if ip.is_link_local or ip == ipaddress.ip_address("fd00:ec2::254"):
            return (
                f"{shown_url(url)} is a link-local address (cloud metadata lives there); "
                "EVALSITE_ALERT_ALLOW_LINK_LOCAL=1 allows it"
            )
    return None


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A webhook answers; it does not send us elsewhere (a redirect could lead anywhere)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def post_json(url: str, payload: dict[str, Any]) -> None:
    """POST `payload` to `url`; Undeliverable for a refused URL or a final 4xx, else any
    error of the connection or a 5xx (worth another attempt)."""
    if (problem := webhook_problem(url)) is not None:
        raise Undeliverable(problem)
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "User-Agent": "evalsite-alerts"},
        method="POST",
    )
    opener = urllib.request.build_opener(_NoRedirects)
    try:
        with opener.open(request, timeout=settings.EVALSITE_ALERT_TIMEOUT) as response:
            response.read(64 * 1024)
    except urllib.error.HTTPError as exc:
        exc.close()
        if 400 <= exc.code < 500 and exc.code not in RETRIED_STATUSES:
            raise Undeliverable(f"the receiver answered {exc.code} {exc.reason}") from None
        if 300 <= exc.code < 400:
            raise Undeliverable(
                f"the receiver redirected ({exc.code}); give its final URL"
            ) from None
        raise


def send_email(address: str, alert: Alert) -> None:
    subject, body = email_message(alert)
    EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [address]).send()


def send_once(target: Target, alert: Alert) -> None:
    if target.kind == Destination.Kind.EMAIL:
        send_email(target.address, alert)
    elif target.kind == Destination.Kind.SLACK:
        post_json(target.address, slack_payload(alert))
    else:
        post_json(target.address, json_payload(alert))


def backoff(attempt: int) -> float:
    """Seconds before attempt `attempt + 1`: 1, 2, 4… up to 8."""
    return float(min(8, 2 ** (attempt - 1)))


def describe(exc: BaseException) -> str:
    """An error as one line a person can act on (a timeout says so)."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"the receiver answered {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        exc = exc.reason if isinstance(exc.reason, BaseException) else exc
    if isinstance(exc, TimeoutError | socket.timeout):
        return f"no answer within {settings.EVALSITE_ALERT_TIMEOUT:g} s"
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, Undeliverable) else f"{type(exc).__name__}: {text}"


def deliver(target: Target, alert: Alert) -> Delivery:
    """Send the alert to one destination, with retries; the Delivery that records it."""
    delivery = Delivery(
        skill_name=alert.skill[:200],
        event=alert.event,
        channel=target.kind,
        destination=target.shown[:300],
        site_wide=target.site_wide,
        headline=alert.headline[:500],
        status=Delivery.Status.FAILED,
    )
    attempts = max(1, settings.EVALSITE_ALERT_ATTEMPTS)
    for attempt in range(1, attempts + 1):
        delivery.attempts = attempt
        try:
            send_once(target, alert)
        except Exception as exc:  # every failure is the receiver's or the network's
            delivery.last_error = redact(describe(exc), target.secrets)[:500]
            if isinstance(exc, Undeliverable) or attempt == attempts:
                break
            time.sleep(backoff(attempt))
        else:
            delivery.status, delivery.delivered_at = Delivery.Status.DELIVERED, timezone.now()
            break
    try:
        delivery.save()
    except DatabaseError:
        log.warning("could not record the delivery of an alert to %s", delivery.destination)
    return delivery


def notify(
    alert: Alert, *, warn: Callable[[str], None] | None = None, site_wide: bool = True
) -> list[Delivery]:
    """Send the alert to every destination of its skill and (if `site_wide`) the site's;
    never raises.

    Each failed delivery is said once, in one line, to `warn` (runevals prints it) and the log.
    """
    try:
        targets = targets_for(alert.skill, site_wide=site_wide)
    except DatabaseError as exc:
        targets = []
        failure_line(f"alerts of {alert.skill}: could not read their destinations ({exc})", warn)
    deliveries = []
    for target in targets:
        try:
            delivery = deliver(target, alert)
        except Exception as exc:  # a bug must not fail the campaign either
            log.exception("alert to %s", target.shown)
            failure_line(
                f"alert to {target.shown} failed: {redact(describe(exc), target.secrets)}", warn
            )
            continue
        deliveries.append(delivery)
        if delivery.status == Delivery.Status.FAILED:
            failure_line(
                f"alert to {delivery.destination} not delivered after {delivery.attempts} "
                f"attempt(s): {delivery.last_error}",
                warn,
            )
    return deliveries


def failure_line(line: str, warn: Callable[[str], None] | None) -> None:
    """A failed delivery, said once: to `warn` (runevals' stderr), else the log (a worker)."""
    line = redact(line)
    if warn is None:
        log.warning("alerts: %s", line)
    else:
        warn(f"runevals: warning: {line}")
