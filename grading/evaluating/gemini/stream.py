"""One round of Gemini CLI's stream-json output, read into the run's conversation events.

The CLI (0.61) prints one JSON object per line: `init` (session id, model), `message` (the
user's prompt; the assistant's text in `delta` pieces), `tool_use` (`tool_name`, `tool_id`,
`parameters`), `tool_result` (`tool_id`, `status`, `output` — what the CLI displays — or
`error`), `error` (warnings and stream errors) and a closing `result` (`status` success or
error, `error`, `stats`). They map to conversation.json's events as Claude Code's do
(claude_code/stream.py), ordinals counting every event: an assistant message is the text
between two tool calls, its deltas joined.

The skill tool, `activate_skill {"name": …}`, is recorded as `Skill {"skill": …}`: the
record `__skill_invoked` and trigger runs read (skillcalls.py), so a skill's loading is read
the same way whichever CLI played the run. Every other tool keeps Gemini CLI's own name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..harness import RECORDED_RESULT_CHARS, AgentResult, cap
from ..skillcalls import SKILL_TOOL

#: Gemini CLI's skill tool (ACTIVATE_SKILL_TOOL_NAME) and its one parameter.
ACTIVATE_SKILL = "activate_skill"
#: What a round summary keeps of the CLI's warnings.
KEPT_WARNINGS = 5


@dataclass
class RoundTranscript:
    texts: list[str] = field(default_factory=list)  # the assistant's, for `agent_asks`
    session_id: str | None = None
    model: str | None = None
    result: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)


def recorded_call(name: str, parameters: Any) -> tuple[str, Any]:
    """The (name, args) a tool call is recorded with: activate_skill as the Skill record."""
    if name == ACTIVATE_SKILL and isinstance(parameters, dict):
        return SKILL_TOOL, {"skill": parameters.get("name")}
    return name, parameters


def transcribe(
    events: list[dict[str, Any]],
    *,
    round_: int,
    result: AgentResult,
    event: Callable[..., dict[str, Any]],
) -> RoundTranscript:
    """Record the round's messages and tool calls through `event` (Conversation._event)."""
    read = RoundTranscript()
    calls: dict[str, list[dict[str, Any]]] = {}
    pending: list[str] = []

    def flush() -> None:
        said = "".join(pending)
        pending.clear()
        if said.strip():
            read.texts.append(said)
            result.final_message = said
            event("assistant_message", round_, text=said)

    for item in events:
        kind = item.get("type")
        if kind == "init" and read.session_id is None:
            read.session_id = _text(item.get("session_id")) or None
            read.model = _text(item.get("model")) or None
        elif kind == "message" and item.get("role") == "assistant":
            pending.append(_text(item.get("content")))
        elif kind == "tool_use":
            flush()
            name, args = recorded_call(_text(item.get("tool_name")), item.get("parameters"))
            recorded = event("tool_invocation", round_, name=name, args=args, result=None)
            entry = {k: recorded[k] for k in ("name", "args", "ordinal", "result")}
            result.tool_invocations.append(entry)
            calls[_text(item.get("tool_id"))] = [recorded, entry]
        elif kind == "tool_result":
            output = cap(tool_output(item), RECORDED_RESULT_CHARS)
            for recorded in calls.get(_text(item.get("tool_id")), []):
                recorded["result"] = output
        elif kind == "error" and len(read.warnings) < KEPT_WARNINGS:
            read.warnings.append(_text(item.get("message"))[:300])
        elif kind == "result":
            flush()
            read.result = item
    flush()
    return read


def tool_output(item: dict[str, Any]) -> str:
    """A tool_result as text: the CLI's output, or its error's message."""
    error = item.get("error")
    if item.get("status") == "error" and isinstance(error, dict):
        return "Error: " + _text(error.get("message"))
    return _text(item.get("output"))


def round_summary(round_: int, read: RoundTranscript) -> dict[str, Any]:
    """What gemini.json keeps of a round: its result's status, error and the CLI's stats."""
    done = read.result or {}
    stats = done.get("stats") if isinstance(done.get("stats"), dict) else {}
    error = done.get("error") if isinstance(done.get("error"), dict) else {}
    return {
        "round": round_,
        "status": _text(done.get("status")) or None,
        "error": _text(error.get("message"))[:300] or None,
        "duration_ms": stats.get("duration_ms"),
        "tool_calls": stats.get("tool_calls"),
        "cli_reported_tokens": stats.get("total_tokens"),
        "warnings": read.warnings,
    }


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
