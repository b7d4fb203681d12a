"""The Gemini API (generativelanguage.googleapis.com) as the API proxy speaks it for Gemini CLI.

What the CLI (0.61, through @google/genai) calls with an API key, and nothing else:

- `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`: every turn of the agent;
- `POST /v1beta/models/{model}:generateContent`: its utility calls (summarising a long tool
  output, compressing the chat, checking for loops);
- `POST /v1beta/models/{model}:countTokens`: sizing a prompt that holds an image or a PDF.

The model is one path segment: letters, digits, `.`, `_` and `-`, starting with a letter
or a digit (so never `.` or `..`), at most 128 characters; no percent-escape is needed by any
model name, so none is taken, and a target spelled any other way is refused (apigate.py's
rule: match the bytes, never a decoding of them). The query is the route's own: `alt=sse`
for the stream, nothing for the others, whatever the client sent (a `key` parameter included).

The key is the `x-goog-api-key` header, as the CLI sends it and as the real key goes
upstream. Usage is the answer's `usageMetadata`, the last one of a stream (its counts are
cumulative), read in the Messages API's names: the prompt not read from the context cache
(`promptTokenCount` + `toolUsePromptTokenCount` − `cachedContentTokenCount`) as
`input_tokens`, the cached part as `cache_read_input_tokens`, candidates and thoughts as
`output_tokens`. Errors are Google's: `{"error": {"code", "message", "status"}}`.
"""

from __future__ import annotations

import contextlib
import json
import re
from email.message import Message
from typing import Any, Final

from ..apibudget import UsageMeter

_MODEL = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
#: action → the query the route is forwarded with.
ACTIONS: Final = {"streamGenerateContent": "?alt=sse", "generateContent": "", "countTokens": ""}
_ROUTE = re.compile(rf"/v1beta/models/({_MODEL}):({'|'.join(ACTIONS)})")
COUNT_TOKENS: Final = "countTokens"
#: Anthropic's error types (what the proxy says) → Google's canonical status names.
_STATUS = {
    "authentication_error": "UNAUTHENTICATED",
    "not_found_error": "NOT_FOUND",
    "invalid_request_error": "INVALID_ARGUMENT",
    "request_too_large": "INVALID_ARGUMENT",
    "api_error": "UNAVAILABLE",
}


def forwarded_target(method: str, target: str) -> str | None:
    """The path and query to send upstream; None when the request is not forwarded."""
    path, _, query = target.partition("?")
    route = _ROUTE.fullmatch(path)
    if method != "POST" or route is None:
        return None
    action = route.group(2)
    if action == "streamGenerateContent" and "alt=sse" not in query.split("&"):
        return None  # without alt=sse the answer is a JSON array the CLI never asks for
    return path + ACTIONS[action]


def usage_of(metadata: Any) -> dict[str, int]:
    """A `usageMetadata` object in the Messages API's names."""
    if not isinstance(metadata, dict):
        return {}

    def count(name: str) -> int:
        value = metadata.get(name)
        return value if isinstance(value, int) and value > 0 else 0

    cached = count("cachedContentTokenCount")
    prompt = count("promptTokenCount") + count("toolUsePromptTokenCount")
    return {
        "input_tokens": max(0, prompt - cached),
        "cache_read_input_tokens": cached,
        "output_tokens": count("candidatesTokenCount") + count("thoughtsTokenCount"),
    }


class GeminiMeter(UsageMeter):
    """The usage of one answer: its stream's last `usageMetadata`, or its JSON body's."""

    def __init__(self, content_type: str) -> None:
        super().__init__(content_type)
        self._metadata: Any = None

    def _event(self, data: bytes) -> None:
        with contextlib.suppress(ValueError):
            event = json.loads(data)
            if isinstance(event, dict) and "usageMetadata" in event:
                self._metadata = event["usageMetadata"]

    def usage(self) -> dict[str, int]:
        if not self.streaming and self._buffer:
            with contextlib.suppress(ValueError):
                body = json.loads(self._buffer)
                if isinstance(body, dict):
                    self._metadata = body.get("usageMetadata")
            self._buffer = bytearray()
        return usage_of(self._metadata)


class GeminiWire:
    """Gemini's generateContent API, as Gemini CLI calls it with an API key."""

    name = "gemini"
    credential_headers = frozenset({"x-goog-api-key", "authorization"})

    def forwarded_target(self, method: str, target: str) -> str | None:
        return forwarded_target(method, target)

    def key_of(self, headers: Message, target: str) -> str | None:
        key = headers.get("x-goog-api-key")
        return key.strip() if key else None

    def upstream_headers(self, api_key: str) -> dict[str, str]:
        return {"x-goog-api-key": api_key}

    def spends_tokens(self, target: str) -> bool:
        return not target.partition("?")[0].endswith(":" + COUNT_TOKENS)

    def meter(self, content_type: str) -> GeminiMeter:
        return GeminiMeter(content_type)

    def error_body(self, status: int, kind: str, message: str) -> bytes:
        error = {"code": status, "message": message, "status": _STATUS.get(kind, "UNKNOWN")}
        return json.dumps({"error": error}).encode()


GEMINI = GeminiWire()
