"""The OpenAI Responses API as the proxy speaks it for Codex (apiwire.py's `Wire`).

Codex 0.171 with a `model_providers` entry of `wire_api = "responses"` makes one call per
model turn, `POST {base_url}/responses` with `Authorization: Bearer <key>` and
`"stream": true`; with `base_url` = the bridge's address + `/v1` that is `/v1/responses`,
the one route let through (the query dropped). It needs no model list from a custom
provider, and compacts a long history with a call to the same route (seen with a low
`model_auto_compact_token_limit`), never `/responses/compact`. Upstream is
settings.OPENAI_BASE_URL (default https://api.openai.com/v1), whose own path the forwarded
`/responses` is appended to.
"""

from __future__ import annotations

import json
from email.message import Message
from typing import Any, Final

from django.conf import settings

from ..apibudget import UsageMeter

ROUTE: Final = "/v1/responses"
DEFAULT_UPSTREAM: Final = "https://api.openai.com/v1"
#: The proxy's own errors (named by Anthropic's error types) in OpenAI's types and codes.
_ERROR_TYPES: Final = {
    "authentication_error": ("invalid_request_error", "invalid_api_key"),
    "not_found_error": ("invalid_request_error", "unknown_url"),
    "request_too_large": ("invalid_request_error", "request_too_large"),
    "invalid_request_error": ("invalid_request_error", None),
    "api_error": ("server_error", None),
}


def api_key() -> str:
    """The OpenAI key; '' when none is configured."""
    return str(settings.OPENAI_API_KEY)


def upstream() -> str:
    return str(settings.OPENAI_BASE_URL) or DEFAULT_UPSTREAM


class ResponsesMeter(UsageMeter):
    """Usage from a Responses answer: the stream's `response.completed` (or a JSON body's
    `usage`), given in the Messages API's names: the input not read from the cache,
    the cached input, the output (reasoning tokens are part of it)."""

    def _event(self, data: bytes) -> None:
        try:
            event = json.loads(data)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        if event.get("type") in ("response.completed", "response.incomplete"):
            response = event.get("response")
            if isinstance(response, dict):
                self._take(response.get("usage"))

    def _take(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        details = usage.get("input_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else 0
        cached = cached if isinstance(cached, int) and cached >= 0 else 0
        total = usage.get("input_tokens")
        output = usage.get("output_tokens")
        total = total if isinstance(total, int) and total >= 0 else 0
        self._usage = {
            "input_tokens": max(0, total - cached),
            "cache_read_input_tokens": min(cached, total),
            "cache_creation_input_tokens": 0,
            "output_tokens": output if isinstance(output, int) and output >= 0 else 0,
        }


class ResponsesWire:
    """OpenAI's Responses API, as Codex calls it."""

    name = "openai-responses"
    credential_headers = frozenset({"authorization", "x-api-key", "openai-organization"})

    def forwarded_target(self, method: str, target: str) -> str | None:
        path = target.partition("?")[0]
        return "/responses" if (method, path) == ("POST", ROUTE) else None

    def key_of(self, headers: Message, target: str) -> str | None:
        scheme, _, token = (headers.get("authorization") or "").partition(" ")
        return token.strip() if scheme.lower() == "bearer" else None

    def upstream_headers(self, api_key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"}

    def spends_tokens(self, target: str) -> bool:
        return True

    def meter(self, content_type: str) -> ResponsesMeter:
        return ResponsesMeter(content_type)

    def error_body(self, status: int, kind: str, message: str) -> bytes:
        error_type, code = _ERROR_TYPES.get(kind, ("invalid_request_error", None))
        error = {"message": message, "type": error_type, "param": None, "code": code}
        return json.dumps({"error": error}).encode()


RESPONSES = ResponsesWire()
