"""One `cline --json` process's output, read into the run's conversation events.

The CLI (3.0.65) prints one JSON object per line (its docs still describe the say/ask lines
of Cline 2; the binary prints these):

- `agent_event` lines wrapping the agent loop's events: `iteration_start`/`iteration_end`,
  `usage` (the CLI's own count of each call), `content_start` (a tool call, whole:
  `toolName`, `toolCallId`, `input`; or a streamed piece of text), `content_update` (a
  command's output as it runs), `content_end` (a tool's `output` or `error` by
  `toolCallId`; a text block, whole), `error`, and `done`;
- `hook_event` lines (agent_start, tool_call, tool_result, agent_end…), lifecycle only;
  a subagent's (`spawn_agent`) events come inline, between its own `agent_start` and
  `agent_end` hook lines, which name a `parentAgentId`;
- a closing `run_result` (`finishReason` completed/error/aborted…, `text`, `usage`,
  `durationMs`), and on a failure an `error` line with its `message`.

Tools keep the CLI's names (`editor`, `read_files`, `run_commands`, `search_codebase`,
`fetch_web_content`, `ask_question`, `spawn_agent`…), with two changes so the graders read a
Cline run as they read any other: `run_commands`' list of `commands` is one `command` string
(newline-joined), and the `skills` tool — Cline's own skill tool, `{"skill": name}` — is
recorded as the `Skill` call `__skill_invoked` and trigger runs look for (skillcalls.py).
As for Claude Code, a subagent's tool calls are the run's work and recorded (their ordinals
listed in the round's summary), its text is not the conversation's (its answer is its
spawn_agent call's result).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..harness import RECORDED_RESULT_CHARS, AgentResult, cap
from ..skillcalls import SKILL_TOOL

#: The CLI's skill tool, and its argument naming the skill.
CLINE_SKILL_TOOL = "skills"
COMMANDS_TOOL = "run_commands"
USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")


@dataclass
class RoundTranscript:
    texts: list[str] = field(default_factory=list)  # the assistant's, for `agent_asks`
    #: The closing run_result line, None when the CLI printed none.
    result: dict[str, Any] | None = None
    #: What the CLI said went wrong (an `error` line or agent event), "" when nothing did.
    error: str = ""
    #: Ordinals of the tool calls a subagent made.
    subagent_calls: list[int] = field(default_factory=list)


def partial_text(line: dict[str, Any]) -> bool:
    """Whether a line is a streamed piece of text or reasoning (its block ends whole)."""
    item = line.get("event")
    return (
        line.get("type") == "agent_event"
        and isinstance(item, dict)
        and item.get("type") in ("content_start", "content_update")
        and item.get("contentType") in ("text", "reasoning")
    )


def tool_record(name: str, args: Any) -> tuple[str, Any]:
    """(the recorded name, the recorded args) of a call of the CLI's tool `name`."""
    if name == CLINE_SKILL_TOOL and isinstance(args, dict):
        return SKILL_TOOL, args
    if name == COMMANDS_TOOL and isinstance(args, dict) and isinstance(args.get("commands"), list):
        rest = {k: v for k, v in args.items() if k != "commands"}
        commands = [c if isinstance(c, str) else json.dumps(c) for c in args["commands"]]
        return name, {**rest, "command": "\n".join(commands)}
    return name, args


def output_text(output: Any) -> str:
    """A tool's output as text: a string; a {query, result} object's result (an error's
    message); a list of those (one per command or file) joined."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        for key in ("result", "error", "message"):
            if isinstance(output.get(key), str):
                return output[key]
        return json.dumps(output, ensure_ascii=False)
    if isinstance(output, list):
        return "\n".join(output_text(item) for item in output)
    return "" if output is None else json.dumps(output, ensure_ascii=False)


def _message(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("message") or value.get("name") or json.dumps(value)
    return " ".join(str(value or "").split())


def transcribe(
    lines: list[dict[str, Any]],
    *,
    round_: int,
    result: AgentResult,
    event: Callable[..., dict[str, Any]],
) -> RoundTranscript:
    """Record the round's messages and tool calls through `event` (Conversation._event)."""
    read = RoundTranscript()
    calls: dict[str, list[dict[str, Any]]] = {}
    subagents = 0  # running now: their events are inline
    for line in lines:
        kind = line.get("type")
        if kind == "hook_event" and line.get("parentAgentId"):
            hook = line.get("hookEventName")
            if hook == "agent_start":
                subagents += 1
            elif hook in ("agent_end", "agent_error") and subagents:
                subagents -= 1
            continue
        if kind == "run_result":
            read.result = line
            continue
        if kind == "error":
            read.error = read.error or _message(line.get("message"))
            continue
        item = line.get("event")
        if kind != "agent_event" or not isinstance(item, dict):
            continue
        step, content = item.get("type"), item.get("contentType")
        if step == "error" and not subagents:
            read.error = read.error or _message(item.get("error"))
        elif step == "content_start" and content == "tool":
            name, args = tool_record(str(item.get("toolName", "")), item.get("input"))
            recorded = event("tool_invocation", round_, name=name, args=args, result=None)
            entry = {k: recorded[k] for k in ("name", "args", "ordinal", "result")}
            result.tool_invocations.append(entry)
            calls[str(item.get("toolCallId"))] = [recorded, entry]
            if subagents:
                read.subagent_calls.append(recorded["ordinal"])
        elif step == "content_end" and content == "tool":
            said = item.get("error") if item.get("error") is not None else item.get("output")
            output = cap(output_text(said), RECORDED_RESULT_CHARS)
            for recorded in calls.get(str(item.get("toolCallId")), []):
                recorded["result"] = output
        elif step == "content_end" and content == "text" and not subagents:
            text = item.get("text")
            if isinstance(text, str) and text.strip():
                read.texts.append(text)
                result.final_message = text
                event("assistant_message", round_, text=text)
    return read


def round_summary(round_: int, read: RoundTranscript) -> dict[str, Any]:
    """What cline.json keeps of a round: how it ended and what the CLI counted."""
    outcome = read.result or {}
    usage = outcome.get("usage") if isinstance(outcome.get("usage"), dict) else {}
    return {
        "round": round_,
        "finish_reason": outcome.get("finishReason"),
        "iterations": outcome.get("iterations"),
        "duration_ms": outcome.get("durationMs"),
        "cli_reported_tokens": sum(
            v for name in USAGE_FIELDS if isinstance(v := usage.get(name), int)
        ),
        "error": read.error[:300] or None,
        "subagent_tool_ordinals": read.subagent_calls,
    }
