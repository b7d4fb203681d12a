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
    #: count_tokens the API answered with a 2xx: a call of the budget's, but no tokens spent
    #: (the API does not bill it, and its count restates the conversation the next call pays).
    token_counts: int = 0
    input: int = 0
    output: int = 0
    cache_creation: int = 0
    cache_read: int = 0
    requests: int = 0  # every request that came with this key, refused ones included
    refused: int = 0  # refused by the budget
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
        tally = self.tally
        if tally.calls + tally.token_counts + tally.in_flight >= self.max_calls:
            return f"the run's budget of {self.max_calls} API calls is used up"
        if tally.tokens >= self.token_budget:
            return f"the run's budget of {self.token_budget} tokens is used up"
        return None

    # The proxy calls these under its lock.
    def admit(self) -> str | None:
        """Count a call about to be forwarded; the reason when the budget refuses it. An
        admitted call holds its place in the budget until `settle` says how it ended."""
        self.tally.requests += 1
        refusal = self.over_budget()
        if refusal:
            self.tally.refused += 1
            self.refusal = refusal
        else:
            self.tally.in_flight += 1
        return refusal

    def settle(
        self, *, spends_tokens: bool, status: int, usage: dict[str, int], seconds: float
    ) -> None:
        """Count an admitted call's end (status 0: no answer) and what the API says it cost."""
        tally = self.tally
        tally.in_flight -= 1
        tally.upstream_seconds += seconds
        if not 200 <= status < 300:
            return
        if not spends_tokens:
            tally.token_counts += 1
            return
        tally.calls += 1
        tally.input += usage.get("input_tokens", 0)
        tally.output += usage.get("output_tokens", 0)
        tally.cache_creation += usage.get("cache_creation_input_tokens", 0)
        tally.cache_read += usage.get("cache_read_input_tokens", 0)


class UsageMeter:
    """The token usage of one answer, read from its server-sent events or its JSON body.

    A stream's message_start carries the input and cache counts, and its message_delta events
    the cumulative output count (today's API repeats the input counts there too); the last
    value of each field is the answer's.
    """

    #: What is kept of an answer to read its usage, whatever the API sends: a whole JSON
    #: answer (the largest, 128k output tokens, is well under this), or one pending event
    #: line of a stream (a line past it is skipped: usage lines are a few hundred bytes).
    MAX_JSON = 8 * 1024 * 1024
    MAX_LINE = 1024 * 1024

    def __init__(self, content_type: str) -> None:
        self.streaming = content_type.startswith("text/event-stream")
        #: Whether the whole answer was relayed (a cut one is a failed call).
        self.complete = False
        self._buffer = bytearray()
        self._skipping_line = False
        self._usage: dict[str, int] = {}

    def feed(self, chunk: bytes) -> None:
        if not self.streaming:
            self._buffer += chunk[: self.MAX_JSON - len(self._buffer)]
            return
        if self._skipping_line:
            end = chunk.find(b"\n")
            if end < 0:
                return
            chunk, self._skipping_line = chunk[end + 1 :], False
        self._buffer += chunk
        *lines, pending = self._buffer.split(b"\n")
        for line in lines:
            if line.startswith(b"data:"):
                self._event(bytes(line[5:].strip()))
        if len(pending) > self.MAX_LINE:
            pending, self._skipping_line = bytearray(), True
        self._buffer = pending

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
            self._buffer = bytearray()
        return self._usage
