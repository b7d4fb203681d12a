"""One round of `opencode run --format json`, read into the run's conversation events.

The CLI prints one JSON object per line, `{type, timestamp, sessionID, part | error}`: `text`
(a finished text part of the assistant's), `tool_use` (a finished tool call: `part.tool`,
`part.state.input`, and `output` or `error`), `step_start`/`step_finish` (one per API answer,
the latter with the tokens the CLI counted) and `error` (the session failed, e.g. an API
error after its retries). They map to conversation.json's events as Claude Code's do
(claude_code/stream.py), ordinals counting every event, and tools take Claude Code's names
(`bash` → `Bash`, `write` → `Write`…, arguments as OpenCode gave them), so the graders read
an OpenCode run as they read any other: `Read .*README` before the first `Write` means the
same on both. The `skill` tool's call (`{"name": …}`) is recorded as the `Skill` call
`{"skill": …}` that `__skill_invoked` and the trigger runs read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..harness import RECORDED_RESULT_CHARS, AgentResult, cap

#: OpenCode's tool ids (packages/opencode/src/tool) → the Claude Code tool that does the same.
#: Another id (an MCP tool, a later release's) is kept as it is.
TOOL_NAMES = {
    "bash": "Bash",
    "read": "Read",
    "write": "Write",
    "edit": "Edit",
    "multiedit": "MultiEdit",
    "apply_patch": "Edit",
    "patch": "Edit",
    "glob": "Glob",
    "grep": "Grep",
    "list": "LS",
    "task": "Task",
    "todowrite": "TodoWrite",
    "todoread": "TodoRead",
    "webfetch": "WebFetch",
    "websearch": "WebSearch",
    "question": "AskUserQuestion",
    "skill": "Skill",
}
SKILL_TOOL = "skill"
#: What a session id looks like; anything else (the agent can write to the CLI's stdout) is
#: not passed back to the CLI as `--session`.
SESSION_ID = re.compile(r"ses_[A-Za-z0-9]{1,100}\Z")
#: How the skill tool's output names the folder it loaded the skill from.
SKILL_BASE = "Base directory for this skill: "


@dataclass
class RoundTranscript:
    texts: list[str] = field(default_factory=list)  # the assistant's, for `agent_asks`
    session_id: str | None = None
    #: The session's failure (`error` events), as "Name: message".
    errors: list[str] = field(default_factory=list)
    steps: int = 0
    cli_reported_tokens: int = 0
    finish_reasons: list[str] = field(default_factory=list)
    loaded_from: list[str] = field(default_factory=list)  # folders skills were loaded from
    #: Tool calls that ended in an error, as {"tool", "input_keys", "error"} (no inputs).
    tool_errors: list[dict[str, Any]] = field(default_factory=list)


def transcribe(
    events: list[dict[str, Any]],
    *,
    round_: int,
    result: AgentResult,
    event: Callable[..., dict[str, Any]],
) -> RoundTranscript:
    """Record the round's messages and tool calls through `event` (Conversation._event)."""
    read = RoundTranscript()
    for item in events:
        kind = item.get("type")
        said_id = item.get("sessionID")
        if read.session_id is None and isinstance(said_id, str) and SESSION_ID.match(said_id):
            read.session_id = said_id
        part = item.get("part")
        part = part if isinstance(part, dict) else {}
        if kind == "text":
            said = part.get("text")
            if isinstance(said, str) and said.strip():
                read.texts.append(said)
                result.final_message = said
                event("assistant_message", round_, text=said)
        elif kind == "tool_use" and isinstance(part.get("tool"), str):
            _record_call(part, read, round_=round_, result=result, event=event)
        elif kind == "step_finish":
            read.steps += 1
            read.cli_reported_tokens += _tokens(part.get("tokens"))
            if isinstance(part.get("reason"), str):
                read.finish_reasons.append(part["reason"])
        elif kind == "error":
            read.errors.append(error_text(item.get("error")))
    return read


def _record_call(
    part: dict[str, Any],
    read: RoundTranscript,
    *,
    round_: int,
    result: AgentResult,
    event: Callable[..., dict[str, Any]],
) -> None:
    tool = part["tool"]
    state = part.get("state") if isinstance(part.get("state"), dict) else {}
    given = state.get("input")
    args = given if isinstance(given, dict) else None
    output = state.get("output") if state.get("status") == "completed" else state.get("error")
    text = output if isinstance(output, str) else ""
    if tool == SKILL_TOOL and isinstance(given, dict) and isinstance(given.get("name"), str):
        args = {"skill": given["name"]}
        if state.get("status") == "completed" and SKILL_BASE in text:
            read.loaded_from.append(text.split(SKILL_BASE, 1)[1].split("\n")[0])
    if state.get("status") == "error":
        read.tool_errors.append(
            {"tool": tool, "input_keys": sorted(args or {}), "error": " ".join(text.split())[:300]}
        )
    recorded = event(
        "tool_invocation",
        round_,
        name=TOOL_NAMES.get(tool, tool),
        args=args,
        result=cap(text, RECORDED_RESULT_CHARS),
    )
    result.tool_invocations.append({k: recorded[k] for k in ("name", "args", "ordinal", "result")})


def _tokens(tokens: Any) -> int:
    """A step's tokens as the proxy counts them: input, output, cache writes and reads."""
    if not isinstance(tokens, dict):
        return 0
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    counted = [tokens.get("input"), tokens.get("output"), cache.get("write"), cache.get("read")]
    return sum(n for n in counted if isinstance(n, int))


def error_text(error: Any) -> str:
    """An `error` event's error in one line: `APIError: messages: …`."""
    if not isinstance(error, dict):
        return str(error)[:300]
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    message = data.get("message") or error.get("message") or ""
    status = data.get("statusCode")
    said = f"{error.get('name') or 'error'}: {message}" + (
        f" (API status {status})" if status else ""
    )
    return " ".join(said.split())[:300]
