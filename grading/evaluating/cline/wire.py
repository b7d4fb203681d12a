"""OpenAI's chat completions, as the Cline CLI's `openai-compatible` provider calls them.

The proxy (apiproxy.py) asks this wire what differs from the Messages API: the one route the
CLI calls, its key (`Authorization: Bearer`), how the real key goes upstream, the usage of an
answer and the shape of an error. The CLI is given the proxy's address as its base URL with
no path, so it calls `POST /chat/completions`; the proxy sends that to the upstream's own path
(settings' OPENAI_BASE_URL, default https://api.openai.com/v1), so `/v1/chat/completions`.

Usage comes as {prompt_tokens, completion_tokens, prompt_tokens_details.cached_tokens}, in the
last chunk of a stream when the request asked for it (`stream_options.include_usage`, which
the CLI does), or in a JSON answer's body; prompt_tokens counts the cached part too, so the
Messages names are input_tokens = prompt − cached, cache_read_input_tokens = cached,
output_tokens = completion. OpenAI has no cache writes.
"""

from __future__ import annotations

import contextlib
import json
from email.message import Message
from typing import Any, Final

from django.conf import settings

from ..apibudget import UsageMeter

CHAT_COMPLETIONS: Final = "/chat/completions"
#: The CLI (3.0.65) calls only this: no model listing, no token counting for this provider.
ROUTES: Final = frozenset({("POST", CHAT_COMPLETIONS)})
DEFAULT_UPSTREAM: Final = "https://api.openai.com/v1"
_BEARER = "bearer "

#: Anthropic's error types (what the proxy names) as OpenAI's `type` and `code`.
_ERROR_TYPES: Final = {
    "authentication_error": ("invalid_request_error", "invalid_api_key"),
    "not_found_error": ("invalid_request_error", "unknown_url"),
    "invalid_request_error": ("invalid_request_error", None),
    "request_too_large": ("invalid_request_error", "request_too_large"),
    "api_error": ("server_error", None),
}


def api_key() -> str:
    """The OpenAI API key the proxy holds; '' when none is configured."""
    return str(settings.OPENAI_API_KEY)


def base_url() -> str:
    return str(settings.OPENAI_BASE_URL) or DEFAULT_UPSTREAM


class ChatUsageMeter(UsageMeter):
    """The usage of one chat-completions answer, read as it is relayed (bounded memory, as
    UsageMeter reads a stream): the last `usage` object of its chunks (the one
    `stream_options.include_usage` adds), or of its JSON body."""

    def __init__(self, content_type: str) -> None:
        super().__init__(content_type)
        self._raw: dict[str, Any] | None = None

    def _event(self, data: bytes) -> None:
        if not data or data == b"[DONE]":
            return
        with contextlib.suppress(ValueError):
            event = json.loads(data)
            if isinstance(event, dict) and isinstance(event.get("usage"), dict):
                self._raw = event["usage"]

    def usage(self) -> dict[str, int]:
        if not self.streaming and self._buffer:
            self._event(bytes(self._buffer))
            self._buffer = bytearray()
        return messages_usage(self._raw)


def messages_usage(raw: Any) -> dict[str, int]:
    """OpenAI's usage object in the Messages API's names (see the module's docstring)."""
    if not isinstance(raw, dict):
        return {}

    def count(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    details = raw.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    prompt = count(raw.get("prompt_tokens"))
    cached = min(cached, prompt)
    return {
        "input_tokens": prompt - cached,
        "output_tokens": count(raw.get("completion_tokens")),
        "cache_read_input_tokens": cached,
    }


class ChatCompletionsWire:
    """The `Wire` (apiwire.py) of OpenAI's chat completions."""

    name = "openai-chat-completions"
    credential_headers = frozenset({"authorization", "api-key", "x-api-key"})

    def forwarded_target(self, method: str, target: str) -> str | None:
        # Byte for byte, as apigate's routes: any other spelling is another path, refused;
        # no query parameter of this route is the agent's to choose.
        path = target.partition("?")[0]
        return path if (method, path) in ROUTES else None

    def key_of(self, headers: Message, target: str) -> str | None:
        value = headers.get("authorization") or ""
        if value[: len(_BEARER)].lower() != _BEARER:
            return None
        return value[len(_BEARER) :].strip() or None

    def upstream_headers(self, api_key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"}

    def spends_tokens(self, target: str) -> bool:
        return True

    def meter(self, content_type: str) -> ChatUsageMeter:
        return ChatUsageMeter(content_type)

    def error_body(self, status: int, kind: str, message: str) -> bytes:
        error_type, code = _ERROR_TYPES.get(kind, ("invalid_request_error", None))
        error = {"message": message, "type": error_type, "param": None, "code": code}
        return json.dumps({"error": error}).encode()


CHAT = ChatCompletionsWire()
