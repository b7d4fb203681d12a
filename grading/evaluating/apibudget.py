"""What the API proxy counts for one run: its budget (`Lease`), what it has spent (`Tally`),
and the token usage read from each answer as it streams past (`UsageMeter`)."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Tally:
    """What one placeholder key's calls cost, as the API reported it."""

    calls: int = 0  # POST /v1/messages the API answered with a 2xx
    input: int = 0
    output: int = 0
    cache_creation: int = 0
    cache_read: int = 0
    requests: int = 0  # every request that came with this key, refused ones included
    refused: int = 0
    upstream_seconds: float = 0.0  # waiting on the API, first byte sent to last byte read
    #: Calls admitted and not yet answered: they count against the budget already, so
    #: concurrent calls (a CLI's subagents) cannot together overshoot it.
    in_flight: int = 0

    @property
    def tokens(self) -> int:
        """Input + output + cache creation + cache read, as SPEC §6 counts a run's tokens."""
        return self.input + self.output + self.cache_creation + self.cache_read


@dataclass
class Lease:
    """One run's placeholder key and budget."""

    key: str
    max_calls: int
    token_budget: int
    tally: Tally = field(default_factory=Tally)
    #: Why the last call was refused (the budget), None while none was.
    refusal: str | None = None

    def over_budget(self) -> str | None:
        if self.tally.calls + self.tally.in_flight >= self.max_calls:
            return f"the run's budget of {self.max_calls} API calls is used up"
        if self.tally.tokens >= self.token_budget:
            return f"the run's budget of {self.token_budget} tokens is used up"
        return None


class UsageMeter:
    """The token usage of one answer, read from its server-sent events or its JSON body.

    A stream's message_start carries the input and cache counts, and its message_delta events
    the cumulative output count (today's API repeats the input counts there too); the last
    value of each field is the answer's.
    """

    MAX_JSON = 8 * 1024 * 1024

    def __init__(self, content_type: str) -> None:
        self.streaming = content_type.startswith("text/event-stream")
        #: Whether the whole answer was relayed (a cut one is a failed call).
        self.complete = False
        self._buffer = b""
        self._usage: dict[str, int] = {}

    def feed(self, chunk: bytes) -> None:
        if not self.streaming:
            if len(self._buffer) < self.MAX_JSON:
                self._buffer += chunk
            return
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            if line.startswith(b"data:"):
                self._event(line[5:].strip())

    def _event(self, data: bytes) -> None:
        try:
            event = json.loads(data)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        if event.get("type") == "message_start":
            self._take((event.get("message") or {}).get("usage"))
        elif event.get("type") == "message_delta":
            self._take(event.get("usage"))

    def _take(self, usage: Any) -> None:
        if isinstance(usage, dict):
            for name, value in usage.items():
                if isinstance(value, int):
                    self._usage[name] = value

    def usage(self) -> dict[str, int]:
        if not self.streaming and self._buffer:
            with contextlib.suppress(ValueError, AttributeError):
                self._take(json.loads(self._buffer).get("usage"))
            self._buffer = b""
        return self._usage
