"""One round of `codex exec --json` output, read into the run's conversation events.

Codex prints one JSON object per line: `thread.started` (the session id that `exec resume`
takes), `turn.started`, `item.started` / `item.updated` / `item.completed` for each thing the
agent did, and `turn.completed` (usage) or `turn.failed` / `error`. A completed item becomes
one event, in the order Codex finished them, as eval-magic reads Codex's stream: an
`agent_message` an assistant message; reasoning, plan updates and Codex's own notices (items
of type `error`, e.g. unknown model metadata) nothing; every other item (`command_execution`,
`file_change`, `mcp_tool_call`, `web_search`…) a tool invocation named by its item type, its
arguments the item's own fields without the structural ones and the output, its result the
output (`aggregated_output`, `output`, `result` or `error`), capped.

Skill invocation is not observable. Codex has no skill tool: it lists skills (name,
description, file path) in its instructions and the model reads a SKILL.md with a shell command
like any file, or follows the listed description without reading it. So no `Skill` call is
recorded and no `__skill_invoked` graded (the harness's `observes_skill_calls` is False; SPEC
§6: read from the harness's own skill tool, otherwise not observable, never guessed). What is
seen is kept as evidence, not as a verdict: a `command_execution` that ran a reading program
(`READERS`) on the staged SKILL.md's path, relative to the task folder or absolute, and exited
0 is listed in the round's `skill_file_reads` (codex.json), with the command's ordinal.
"""

from __future__ import annotations

import json
import posixpath
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from ..harness import RECORDED_RESULT_CHARS, AgentResult, cap

NOT_TOOLS = frozenset({"agent_message", "reasoning", "plan_update", "todo_list", "error"})
#: Item keys that are not a tool's arguments (eval-magic's codex descriptor leaves out the same).
NOT_ARGS = ("id", "type", "status", "aggregated_output", "output", "result", "error")
RESULT_KEYS = ("aggregated_output", "output", "result", "error")
#: Programs whose run on a file shows its text to the agent.
READERS = frozenset({"cat", "sed", "head", "tail", "less", "more", "nl", "awk", "bat", "tac"})
MAX_COMMAND = 64 * 1024
#: How Codex wraps a command it runs: `/bin/bash -lc '<command>'`.
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_SEPARATORS = frozenset({"|", "||", "&&", ";", "&"})


@dataclass
class RoundTranscript:
    texts: list[str] = field(default_factory=list)  # the assistant's, for `agent_asks`
    thread_id: str | None = None
    completed: bool = False  # a turn.completed arrived
    failure: str | None = None  # turn.failed's message
    errors: list[str] = field(default_factory=list)  # error events' messages
    usage: dict[str, int] = field(default_factory=dict)  # the CLI's own report
    notices: list[str] = field(default_factory=list)  # Codex's error items (not the agent's)
    #: Reads of a staged SKILL.md by a command: {"skill", "ordinal"} (evidence, not a verdict).
    skill_file_reads: list[dict[str, Any]] = field(default_factory=list)


def transcribe(
    events: list[dict[str, Any]],
    *,
    round_: int,
    result: AgentResult,
    event: Callable[..., dict[str, Any]],
    staged: dict[str, str],
    env: str,
) -> RoundTranscript:
    """Record the round's messages and tool calls through `event` (Conversation._event).

    `staged`: skill name → its SKILL.md relative to the task folder `env` (skill-loading
    conditions only), whose reads by a command are listed in `skill_file_reads`.
    """
    read = RoundTranscript()
    for line in events:
        kind = line.get("type")
        if kind == "thread.started" and isinstance(line.get("thread_id"), str):
            read.thread_id = read.thread_id or line["thread_id"][:100]
        elif kind == "turn.completed":
            read.completed = True
            usage = line.get("usage")
            if isinstance(usage, dict):
                read.usage = {k: v for k, v in usage.items() if isinstance(v, int)}
        elif kind == "turn.failed":
            error = line.get("error")
            said = error.get("message") if isinstance(error, dict) else None
            read.failure = _one_line(said or kind)
        elif kind == "error":
            # A stream error Codex may still retry past: fatal only if no turn.completed.
            read.errors.append(_one_line(line.get("message") or kind))
        elif kind == "item.completed" and isinstance(line.get("item"), dict):
            _item(line["item"], read, round_=round_, result=result, event=event)
            if staged and line["item"].get("type") == "command_execution":
                _skill_reads(line["item"], read, result, staged=staged, env=env)
    return read


def _item(
    item: dict[str, Any],
    read: RoundTranscript,
    *,
    round_: int,
    result: AgentResult,
    event: Callable[..., dict[str, Any]],
) -> None:
    kind = str(item.get("type", ""))
    if kind == "agent_message":
        text = item.get("text")
        if isinstance(text, str) and text.strip():
            read.texts.append(text)
            result.final_message = text
            event("assistant_message", round_, text=text)
        return
    if kind == "error":
        read.notices.append(_one_line(item.get("message", "")))
        return
    if kind in NOT_TOOLS or not kind:
        return
    args = {k: v for k, v in item.items() if k not in NOT_ARGS}
    output = next((item[k] for k in RESULT_KEYS if k in item), None)
    text = output if isinstance(output, str) or output is None else json.dumps(output)
    _record(
        result,
        event,
        round_,
        name=kind,
        args=args or None,
        output=None if text is None else cap(text, RECORDED_RESULT_CHARS),
    )


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())[:300]


def _record(
    result: AgentResult,
    event: Callable[..., dict[str, Any]],
    round_: int,
    *,
    name: str,
    args: Any,
    output: str | None,
) -> dict[str, Any]:
    recorded = event("tool_invocation", round_, name=name, args=args, result=output)
    result.tool_invocations.append({k: recorded[k] for k in ("name", "args", "ordinal", "result")})
    return recorded


def _skill_reads(
    item: dict[str, Any],
    read: RoundTranscript,
    result: AgentResult,
    *,
    staged: dict[str, str],
    env: str,
) -> None:
    if item.get("exit_code") != 0 or not isinstance(item.get("command"), str):
        return
    ordinal = len(result.events) - 1  # the command's own event, just recorded
    for name in skills_read(item["command"], staged=staged, env=env):
        read.skill_file_reads.append({"skill": name, "ordinal": ordinal})


def skills_read(command: str, *, staged: dict[str, str], env: str) -> list[str]:
    """The staged skills whose SKILL.md `command` shows with a reading program, in order.

    A command longer than MAX_COMMAND is not parsed (no read of a SKILL.md needs one)."""
    words = _words(command) if len(command) <= MAX_COMMAND else None
    if words is None:
        return []
    paths = {posixpath.normpath(relative): name for name, relative in staged.items()}
    found: list[str] = []
    segment: list[str] = []
    for word in [*words, ";"]:
        if word not in _SEPARATORS:
            segment.append(word)
            continue
        if segment and PurePosixPath(segment[0]).name in READERS:
            for argument in segment[1:]:
                name = paths.get(_relative(argument, env))
                if name is not None and name not in found:
                    found.append(name)
        segment = []
    return found


def _words(command: str) -> list[str] | None:
    """The command's words and operators, unwrapped from Codex's `bash -lc '…'`; None when
    it does not parse."""
    try:
        outer = shlex.split(command, posix=True)
        wrapped = len(outer) == 3 and PurePosixPath(outer[0]).name in _SHELLS
        inner = outer[2] if wrapped and outer[1] in ("-c", "-lc") else command
        lexer = shlex.shlex(inner, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return None


def _relative(argument: str, env: str) -> str:
    """A path argument relative to the task folder (normalised), or "" outside it."""
    path = posixpath.normpath(argument)
    if posixpath.isabs(path):
        root = posixpath.normpath(env)
        if not path.startswith(root + "/"):
            return ""
        path = path[len(root) + 1 :]
    return path.removeprefix("./")
