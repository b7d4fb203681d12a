"""How one round's stream-json events become the run's transcript (no CLI needed)."""

from __future__ import annotations

import io
from collections import deque
from typing import Any

import pytest

from grading.evaluating.claude_code.stream import (
    StreamTooLarge,
    drain,
    read_events,
    round_summary,
    transcribe,
)
from grading.evaluating.harness import AgentResult


def assistant(*blocks: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    return {
        "type": "assistant",
        "parent_tool_use_id": parent,
        "message": {"model": "claude-sonnet-5-5", "content": list(blocks)},
    }


def user(*blocks: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    return {"type": "user", "parent_tool_use_id": parent, "message": {"content": list(blocks)}}


def tool_use(id_: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": args}


def tool_result(id_: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id_, "content": [{"type": "text", "text": text}]}


def record(events: list[dict[str, Any]]) -> tuple[AgentResult, Any]:
    result = AgentResult()

    def event(kind: str, round_: int, **fields: Any) -> dict[str, Any]:
        item = {"type": kind, "ordinal": len(result.events), "round": round_, **fields}
        result.events.append(item)
        return item

    return result, transcribe(events, round_=1, result=result, event=event)


def test_a_subagents_tool_calls_are_the_runs_in_order_and_its_text_is_not() -> None:
    events = [
        {"type": "system", "subtype": "init", "tools": ["Read", "Agent"]},
        assistant(tool_use("t1", "Agent", prompt="Read the README for me")),
        assistant(tool_use("s1", "Read", file_path="/task/README.md"), parent="t1"),
        user(tool_result("s1", "# Fixture"), parent="t1"),
        assistant({"type": "text", "text": "The README says Fixture."}, parent="t1"),
        user(tool_result("t1", "The README says Fixture.")),
        assistant(tool_use("t2", "Write", file_path="/task/notes.md", content="Notes")),
        user(tool_result("t2", "written")),
        assistant({"type": "text", "text": "Done."}),
        {"type": "result", "subtype": "success", "is_error": False, "usage": {}},
    ]

    result, read = record(events)

    calls = [(e["ordinal"], e.get("name"), e.get("result")) for e in result.events]
    assert calls[:3] == [
        (0, "Agent", "The README says Fixture."),
        (1, "Read", "# Fixture"),  # inside the Agent call, before its result came back
        (2, "Write", "written"),
    ]
    assert [e["type"] for e in result.events] == ["tool_invocation"] * 3 + ["assistant_message"]
    assert result.final_message == "Done." and read.texts == ["Done."]
    assert [t["name"] for t in result.tool_invocations] == ["Agent", "Read", "Write"]
    assert read.subagent_calls == [1]
    assert round_summary(1, read.result, subagent_calls=read.subagent_calls)[
        "subagent_tool_ordinals"
    ] == [1]


def test_notices_the_cli_writes_itself_are_not_the_conversation() -> None:
    events = [
        assistant({"type": "text", "text": "API Error: 529"}),
        assistant({"type": "text", "text": "Real answer."}),
    ]
    events[0]["message"]["model"] = "<synthetic>"

    result, read = record(events)

    assert [e.get("text") for e in result.events] == ["Real answer."]
    assert read.subagent_calls == []


class Endless(io.RawIOBase):
    """What an agent's command writing to the CLI's own stdout looks like: it never ends."""

    def __init__(self, piece: bytes) -> None:
        self.piece, self.served = piece, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = len(buffer)
        buffer[:size] = (self.piece * (size // len(self.piece) + 1))[:size]
        self.served += size
        return size


def test_a_stream_flooded_with_events_is_cut_at_its_bound() -> None:
    flood = io.BufferedReader(Endless(b'{"type": "noise"}\n'))

    with pytest.raises(StreamTooLarge, match="more than 1 MiB of events"):
        for _ in read_events(flood, max_bytes=1024**2):
            pass


def test_stderr_without_line_ends_is_read_in_pieces_and_only_its_tail_kept() -> None:
    endless = Endless(b"x")
    tail: deque[str] = deque(maxlen=3)

    class Stop(io.BufferedReader):
        def readline(self, size: int = -1) -> bytes:
            if endless.served > 8 * 1024**2:
                raise ValueError("closed")  # as the pipe does once the CLI is killed
            return super().readline(size)

    drain(Stop(endless), tail)

    assert len(tail) == 3 and all(len(line) <= 500 for line in tail)
