"""One round of the CLI's stream-json output, read into the run's conversation events.

The CLI prints one JSON object per line: a `system`/`init` event (the session's tools,
skills, plugins), then `assistant` events (one per content block of each API answer) and
`user` events (the tool results it sends back), and a closing `result` (status, usage,
permission denials). They map to conversation.json's events, ordinals counting every event,
so the graders read a CLI run exactly as they read a messages-harness run.
"""

from __future__ import annotations

import contextlib
import json
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..harness import RECORDED_RESULT_CHARS, AgentResult, cap

#: stream-json lines longer than this are dropped (the CLI caps tool output far below).
MAX_EVENT_BYTES = 16 * 1024**2
#: All of one round's stream-json: far more than 50 API calls' events, capped tool output
#: included, ever come to.
MAX_STREAM_BYTES = 64 * 1024**2
#: How the CLI introduces a loaded skill's text: the folder it loaded it from.
SKILL_BASE = "Base directory for this skill: "
USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


@dataclass
class RoundTranscript:
    texts: list[str] = field(default_factory=list)  # the assistant's, for `agent_asks`
    init: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    loaded_from: list[str] = field(default_factory=list)  # folders skills were loaded from
    #: Ordinals of the tool calls a subagent made (inside an Agent/Task call).
    subagent_calls: list[int] = field(default_factory=list)


def transcribe(
    events: list[dict[str, Any]],
    *,
    round_: int,
    result: AgentResult,
    event: Callable[..., dict[str, Any]],
) -> RoundTranscript:
    """Record the round's messages and tool calls through `event` (Conversation._event).

    The main agent's messages and every tool call of the run, in the order the CLI made
    them: a subagent's calls (events with a parent_tool_use_id) are the run's work too, so
    a transcript_check sees a README a subagent read; they are listed in `subagent_calls`.
    A subagent's own text is not the conversation's (its answer is its Agent/Task call's
    result), nor are notices the CLI writes itself (API errors, model "<synthetic>") and the
    text it adds to user turns (system reminders, a loaded skill's body).
    """
    read = RoundTranscript()
    calls: dict[str, list[dict[str, Any]]] = {}
    for item in events:
        kind = item.get("type")
        if kind == "system" and item.get("subtype") == "init" and read.init is None:
            read.init = item
        elif kind == "result":
            read.result = item
        message = item.get("message") or {}
        content = message.get("content") if isinstance(message, dict) else None
        if kind not in ("assistant", "user"):
            continue
        subagent = bool(item.get("parent_tool_use_id"))
        if not isinstance(content, list):
            continue
        if kind == "assistant" and (message.get("model") == "<synthetic>" or item.get("error")):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if kind == "assistant" and block.get("type") == "text":
                if block.get("text", "").strip() and not subagent:
                    read.texts.append(block["text"])
                    result.final_message = block["text"]
                    event("assistant_message", round_, text=block["text"])
            elif kind == "assistant" and block.get("type") == "tool_use":
                recorded = event(
                    "tool_invocation",
                    round_,
                    name=str(block.get("name", "")),
                    args=block.get("input"),
                    result=None,
                )
                entry = {k: recorded[k] for k in ("name", "args", "ordinal", "result")}
                result.tool_invocations.append(entry)
                calls[str(block.get("id"))] = [recorded, entry]
                if subagent:
                    read.subagent_calls.append(recorded["ordinal"])
            elif block.get("type") == "tool_result":
                output = cap(result_text(block.get("content")), RECORDED_RESULT_CHARS)
                for recorded in calls.get(str(block.get("tool_use_id")), []):
                    recorded["result"] = output
            elif block.get("type") == "text" and block.get("text", "").startswith(SKILL_BASE):
                read.loaded_from.append(block["text"][len(SKILL_BASE) :].split("\n")[0])
    return read


def result_text(content: Any) -> str:
    """A tool result as text: its text blocks joined, anything else named."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            block.get("text", "") if block.get("type") == "text" else f"[{block.get('type')}]"
            for block in content
            if isinstance(block, dict)
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def round_summary(
    round_: int, result: dict[str, Any], *, subagent_calls: list[int] | None = None
) -> dict[str, Any]:
    """What claude-code.json keeps of a round's result event.

    Denied tool calls keep their input's keys only, as eval-magic's permission-denials.json
    does: a refused Write must not spill file contents into a report.
    """
    usage = result.get("usage") or {}
    denials = [
        {
            "tool": str(d.get("tool_name", "")),
            "input_keys": sorted(d.get("tool_input") or {}),
        }
        for d in result.get("permission_denials") or []
        if isinstance(d, dict)
    ]
    return {
        "round": round_,
        "subtype": result.get("subtype"),
        "is_error": bool(result.get("is_error")),
        "terminal_reason": result.get("terminal_reason"),
        "api_error_status": result.get("api_error_status"),
        "num_turns": result.get("num_turns"),
        "duration_ms": result.get("duration_ms"),
        "cli_reported_tokens": sum(usage.get(name) or 0 for name in USAGE_FIELDS),
        "permission_denials": denials,
        "subagent_tool_ordinals": subagent_calls or [],
    }


class StreamTooLarge(Exception):
    """A round's stream-json output passed MAX_STREAM_BYTES; the run is errored."""


def read_events(stream: Any, *, max_bytes: int = MAX_STREAM_BYTES) -> Iterator[dict[str, Any]]:
    """The JSON objects of a stream-json output, line by line (overlong lines dropped).

    The agent's commands share the CLI's sandbox and can write to its stdout
    (`/proc/<pid>/fd/1`), so what is read is bounded: past `max_bytes` in all this raises
    StreamTooLarge rather than hold an unbounded list of events.
    """
    read = 0

    def counted(piece: bytes) -> bytes:
        nonlocal read
        read += len(piece)
        if read > max_bytes:
            raise StreamTooLarge(f"the CLI wrote more than {max_bytes // 1024**2} MiB of events")
        return piece

    while line := counted(stream.readline(MAX_EVENT_BYTES)):
        if not line.endswith(b"\n"):
            while (rest := counted(stream.readline(MAX_EVENT_BYTES))) and not rest.endswith(b"\n"):
                pass
            continue
        with contextlib.suppress(ValueError):
            item = json.loads(line)
            if isinstance(item, dict):
                yield item


#: stderr is read in pieces this long: a line without an end must not grow in memory.
STDERR_PIECE = 64 * 1024


def drain(stream: Any, tail: deque[str]) -> None:
    """Read stderr to its end (a full pipe would block the CLI), keeping its last lines."""
    with contextlib.suppress(OSError, ValueError):
        while piece := stream.readline(STDERR_PIECE):
            if text := piece.decode("utf-8", errors="replace").strip():
                tail.append(text[:500])
