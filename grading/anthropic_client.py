"""The Anthropic client evalsite calls the Messages API with, built in one place.

The agent, the `llm` responder and the judge (in runevals and regrade) reach the API the
same way, and the claude-code harness's proxy forwards to the same place with the same key:
ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL from settings, the retries and timeout from
EVALSITE_API_MAX_RETRIES and EVALSITE_API_TIMEOUT. `MessagesClient` is what callers need
of a client, so a wrapper (the runner's timing one) or a test's stands in for it.
"""

from __future__ import annotations

from typing import Any, Protocol

import anthropic
from django.conf import settings


class MessagesClient(Protocol):
    """What a caller needs of a client: `anthropic.Anthropic` or a wrapper around it."""

    @property
    def messages(self) -> Any: ...


def api_key() -> str:
    """The API key; '' when none is configured."""
    return str(settings.ANTHROPIC_API_KEY)


def base_url() -> str | None:
    """Where the API is; None for Anthropic's own."""
    return str(settings.ANTHROPIC_BASE_URL) or None


def anthropic_client() -> anthropic.Anthropic:
    """A client for the configured API, retrying as the operator set."""
    return anthropic.Anthropic(
        api_key=api_key(),
        base_url=base_url(),
        max_retries=settings.EVALSITE_API_MAX_RETRIES,
        timeout=settings.EVALSITE_API_TIMEOUT,
    )
