"""`transcript_check`: a Rust regex searched in the run's tool calls or assistant messages.

SPEC §6 fixes the semantics and the evidence strings; eval-magic graded the real baselines
this way (`matched ordinal 4: Bash {"command":"git worktree add …`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .rustregex import RustRegexError, compile_rust_regex
from .verdict import Verdict

GRADER = "transcript_check"
#: What `must_precede: first_write` counts as a write: Claude Code's file tools (and the
#: messages harness's), and the other harnesses' own, as their transcripts name them: Gemini
#: CLI's `write_file` and `replace`, Codex's `file_change` items. Cline's `editor` also views
#: files, so only its writing commands count (`EDITOR_WRITES`).
WRITE_TOOLS = frozenset(
    {"Write", "Edit", "MultiEdit", "NotebookEdit", "write_file", "replace", "file_change"}
)
EDITOR_TOOL = "editor"
EDITOR_WRITES = frozenset({"create", "str_replace", "insert"})
EVIDENCE_CHARS = 200


@dataclass(frozen=True)
class Candidate:
    """One searchable item of a transcript: its ordinal and the text a pattern sees."""

    ordinal: int
    text: str
    name: str = ""  # the tool name, for tool invocations


def render_invocation(name: str, args: Any) -> str:
    """`"<name> <compact JSON args>"`, or just the name when the call has no args."""
    if args is None:
        return name
    return f"{name} {json.dumps(args, separators=(',', ':'), ensure_ascii=False)}"


def _events(run: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    conversation = run.get("conversation")
    if isinstance(conversation, Mapping) and conversation.get("events"):
        return list(conversation["events"])
    return None


def raw_tool_calls(run: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The run's tool invocations as recorded, in ordinal order.

    Ordinals count every event of the conversation, so the conversation's events are used
    when the run has them; otherwise `tool_invocations`, whose ordinals were kept from it.
    """
    events = _events(run)
    if events is not None:
        calls = [e for e in events if e.get("type") == "tool_invocation"]
    else:
        calls = list(run.get("tool_invocations") or [])
    return sorted(calls, key=lambda call: int(call.get("ordinal", 0)))


def tool_calls(run: Mapping[str, Any]) -> list[Candidate]:
    """The run's tool invocations as `transcript_check` sees them, in ordinal order."""
    return [
        Candidate(
            ordinal=int(call.get("ordinal", 0)),
            text=render_invocation(str(call.get("name", "")), call.get("args")),
            name=str(call.get("name", "")),
        )
        for call in raw_tool_calls(run)
    ]


def assistant_messages(run: Mapping[str, Any]) -> list[Candidate]:
    """The run's assistant messages in ordinal order.

    Without a conversation, the final message is the only one known; it came after every
    tool call, so it is given the ordinal after the last one.
    """
    events = _events(run)
    if events is not None:
        messages = [
            Candidate(ordinal=int(e["ordinal"]), text=str(e.get("text", "")))
            for e in events
            if e.get("type") == "assistant_message"
        ]
        return sorted(messages, key=lambda c: c.ordinal)
    final = run.get("final_message") or ""
    if not final:
        return []
    calls = tool_calls(run)
    return [Candidate(ordinal=calls[-1].ordinal + 1 if calls else 0, text=str(final))]


def transcript_check(run: Mapping[str, Any], assertion: Mapping[str, Any]) -> Verdict:
    """The verdict on one `transcript_check` assertion (confidence always 1.0)."""
    check = assertion.get("check") or "tool_invocation_matches"
    pattern = assertion.get("pattern")
    must_precede = assertion.get("must_precede") or "any"

    def result(passed: bool, evidence: str) -> Verdict:
        return Verdict(str(assertion["id"]), passed, evidence, grader=GRADER)

    if check == "tool_invocation_matches":
        candidates, unit = tool_calls(run), "invocation(s)"
        if not candidates:
            return result(False, "no tool invocations recorded: the transcript is missing")
    elif check == "assistant_message_matches":
        candidates, unit = assistant_messages(run), "message(s)"
        if not candidates:
            return result(False, "no assistant messages recorded: the transcript is missing")
    else:
        return result(False, f"unknown transcript check {check!r}")
    if not isinstance(pattern, str):
        return result(False, "the assertion has no pattern")
    if must_precede not in ("any", "first_write", "completion_claim"):
        return result(False, f"unknown must_precede value {must_precede!r}")
    try:
        regex = compile_rust_regex(pattern)
    except RustRegexError as exc:
        return result(False, f"invalid pattern /{pattern}/: {exc}")

    matches = [c for c in candidates if regex.search(c.text)]
    if not matches:
        return result(False, f"no candidate matched /{pattern}/ across {len(candidates)} {unit}")
    limit, where = _limit(run, must_precede)
    in_time = [c for c in matches if limit is None or c.ordinal < limit]
    if not in_time:
        return result(
            False,
            f"{len(matches)} match(es) of /{pattern}/ occurred, but none before {where}",
        )
    first = in_time[0]
    return result(True, f"matched ordinal {first.ordinal}: {first.text[:EVIDENCE_CHARS]}")


def _writes(call: Mapping[str, Any]) -> bool:
    name = call.get("name")
    if name == EDITOR_TOOL:
        args = call.get("args")
        return isinstance(args, Mapping) and args.get("command") in EDITOR_WRITES
    return name in WRITE_TOOLS


def _limit(run: Mapping[str, Any], must_precede: str) -> tuple[int | None, str]:
    """The ordinal a match must come strictly before (None: no limit), and its name."""
    if must_precede == "first_write":
        writes = [int(call.get("ordinal", 0)) for call in raw_tool_calls(run) if _writes(call)]
        return (min(writes) if writes else None), "the first write"
    if must_precede == "completion_claim":
        messages = assistant_messages(run)
        return (messages[-1].ordinal if messages else None), "the completion claim"
    return None, ""
