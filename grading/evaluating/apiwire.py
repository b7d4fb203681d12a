"""The API dialects the proxy speaks: which calls it forwards, whose key a request shows,
how the real key goes upstream, how an answer's usage is read, and the shape of its errors.

ApiProxy (apiproxy.py) does the same work for every agent CLI — a placeholder key checked, a
body capped, a budget held, every call counted — and asks its `Wire` only what differs
between APIs. `MESSAGES` is Anthropic's Messages API (Claude Code, OpenCode, the messages
harness); each other harness brings its own wire (the OpenAI Responses API for Codex, chat
completions for Cline, Gemini's generateContent for Gemini CLI) beside its harness code.

A wire's usage is given in the Messages API's names (`input_tokens`, `output_tokens`,
`cache_creation_input_tokens`, `cache_read_input_tokens`), the counts evalsite records for
every run (SPEC §6): `input_tokens` is the input not read from a cache.
"""

from __future__ import annotations

import json
from email.message import Message
from typing import Protocol

from . import apigate
from .apibudget import UsageMeter


class Meter(Protocol):
    """Reads one answer's token usage as it is relayed."""

    #: Set by the proxy once the whole answer was relayed (a cut one is a failed call).
    complete: bool

    def feed(self, chunk: bytes) -> None: ...

    def usage(self) -> dict[str, int]:
        """The answer's usage, in the Messages API's names (see the module's docstring)."""
        ...


class Wire(Protocol):
    #: Named in errors and in a harness's record of its run.
    name: str
    #: Headers never copied upstream, besides hop-by-hop ones: those carrying a key.
    credential_headers: frozenset[str]

    def forwarded_target(self, method: str, target: str) -> str | None:
        """The path and query to send upstream for a request target; None when refused."""
        ...

    def key_of(self, headers: Message, target: str) -> str | None:
        """The (placeholder) key a request presents."""
        ...

    def upstream_headers(self, api_key: str) -> dict[str, str]:
        """The headers that carry the real key upstream."""
        ...

    def spends_tokens(self, target: str) -> bool:
        """Whether a 2xx answer to `target` (as forwarded) is a call that spends tokens; one
        that does not (a token count) still counts against the run's call budget."""
        ...

    def meter(self, content_type: str) -> Meter: ...

    def error_body(self, status: int, kind: str, message: str) -> bytes:
        """An error of the proxy's own, in this API's shape (`kind`: Anthropic's error type)."""
        ...


class MessagesWire:
    """Anthropic's Messages API, as the Claude Code CLI and OpenCode call it."""

    name = "anthropic-messages"
    credential_headers = frozenset({"x-api-key", "authorization"})

    def forwarded_target(self, method: str, target: str) -> str | None:
        return apigate.forwarded_target(method, target)

    def key_of(self, headers: Message, target: str) -> str | None:
        return apigate.key_of(headers)

    def upstream_headers(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key}

    def spends_tokens(self, target: str) -> bool:
        return target.partition("?")[0] != apigate.COUNT_TOKENS

    def meter(self, content_type: str) -> Meter:
        return UsageMeter(content_type)

    def error_body(self, status: int, kind: str, message: str) -> bytes:
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


MESSAGES = MessagesWire()
