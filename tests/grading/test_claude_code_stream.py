"""How one round's stream-json events become the run's transcript (no CLI needed)."""

from __future__ import annotations

from typing import Any

from grading.evaluating.agent import AgentResult
from grading.evaluating.claude_code.stream import round_summary, transcribe


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
