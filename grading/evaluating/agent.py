"""One agent run through the Messages API with tool use, recorded as eval-magic events.

The loop mirrors Claude Code closely enough that evals written for it work unchanged: the
same tools, the skills block in the system prompt, rounds that end when the model stops
asking for tools, scripted follow-up `turns` (or an `llm` responder) between rounds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .tools import Toolbox, cap

#: Stored tool results are cut to this (run.json's schema suggests ~2 KB).
RECORDED_RESULT_CHARS = 2048
DEFAULT_MAX_CALLS = 50
DEFAULT_TOKEN_BUDGET = 2_000_000
MAX_OUTPUT_TOKENS = 8192
RESPONDER_DEFAULT_TURNS = 8

SYSTEM_PROMPT = """You are an AI coding agent. You are working in the directory {root}, \
which is a git repository holding the files for this task. Use the tools to inspect and \
change files there and to run commands. Paths may be absolute or relative to {root}. \
When you have finished, reply with a concise summary of what you did."""

SKILLS_BLOCK = "The following skills are available for use with the Skill tool:"


class MessagesClient(Protocol):
    """What the harness needs of a client: `anthropic.Anthropic` or a wrapper around it."""

    @property
    def messages(self) -> Any: ...


def system_prompt(root: str, skills: dict[str, str]) -> str:
    """The agent's system prompt; `skills` maps names to descriptions."""
    text = SYSTEM_PROMPT.format(root=root)
    if skills:
        lines = "\n".join(f"- {name}: {description}" for name, description in skills.items())
        text += f"\n\n{SKILLS_BLOCK}\n\n{lines}"
    return text


@dataclass
class Usage:
    calls: int = 0
    input: int = 0
    output: int = 0
    cache_creation: int = 0
    cache_read: int = 0

    def add(self, usage: Any) -> None:
        self.calls += 1
        self.input += getattr(usage, "input_tokens", 0) or 0
        self.output += getattr(usage, "output_tokens", 0) or 0
        self.cache_creation += getattr(usage, "cache_creation_input_tokens", 0) or 0
        self.cache_read += getattr(usage, "cache_read_input_tokens", 0) or 0

    @property
    def total(self) -> int:
        """Input + output + cache creation + cache read, as SPEC §6 counts a run's tokens."""
        return self.input + self.output + self.cache_creation + self.cache_read


@dataclass
class AgentResult:
    events: list[dict[str, Any]] = field(default_factory=list)
    tool_invocations: list[dict[str, Any]] = field(default_factory=list)
    final_message: str = ""
    status: str = "completed"
    stop_reason: str | None = None
    delivered_followups: int = 0
    stopped_before_followup: int | None = None
    responder_outcome: dict[str, Any] | None = None
    usage: Usage = field(default_factory=Usage)
    duration_ms: int = 0
    #: Files the harness keeps beside run.json (name → JSON data), written by the runner.
    artifacts: dict[str, Any] = field(default_factory=dict)

    def conversation(self) -> dict[str, Any]:
        """conversation.json, valid against eval-magic's conversation schema."""
        data: dict[str, Any] = {
            "status": self.status,
            "delivered_followups": self.delivered_followups,
        }
        if self.status == "stopped":
            data["stop_reason"] = self.stop_reason
            data["stopped_before_followup"] = self.stopped_before_followup or 1
        data["events"] = self.events
        if self.responder_outcome:
            data["responder_outcome"] = self.responder_outcome
        return data


@dataclass
class AgentSettings:
    model: str
    max_calls: int = DEFAULT_MAX_CALLS
    token_budget: int = DEFAULT_TOKEN_BUDGET
    responder_model: str | None = None


class Conversation:
    """Runs one eval's conversation: the opening prompt, rounds of tool use, follow-ups."""

    def __init__(
        self,
        client: MessagesClient,
        settings: AgentSettings,
        *,
        system: str,
        tools: list[dict[str, Any]],
        toolbox: Toolbox,
        matches: Callable[[str, str], bool],
        result: AgentResult | None = None,
    ):
        self.client = client
        self.settings = settings
        # Prompt caching: the system prompt and tools repeat across every call of every run.
        self.system = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        self.tools = [dict(t) for t in tools]
        if self.tools:
            self.tools[-1]["cache_control"] = {"type": "ephemeral"}
        self.toolbox = toolbox
        self.matches = matches
        # The caller's result, when given, so what a failed run did is still known.
        self.result = result if result is not None else AgentResult()
        self.messages: list[dict[str, Any]] = []

    def _event(self, kind: str, round_: int, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "ordinal": len(self.result.events), "round": round_, **fields}
        self.result.events.append(event)
        return event

    def _out_of_budget(self) -> bool:
        usage = self.result.usage
        return usage.calls >= self.settings.max_calls or usage.total >= self.settings.token_budget

    def _stop(self, reason: str) -> None:
        self.result.status = "stopped"
        self.result.stop_reason = reason
        self.result.stopped_before_followup = self.result.delivered_followups + 1

    def run(self, case: dict[str, Any]) -> AgentResult:
        """Play the eval's conversation; API errors propagate (the caller records `errored`)."""
        started = time.monotonic()
        try:
            self._play(case)
        finally:
            self.result.duration_ms = round((time.monotonic() - started) * 1000)
        return self.result

    def _play(self, case: dict[str, Any]) -> None:
        turns = case.get("turns") or []
        responder = case.get("responder")
        round_ = 1
        self._say(case["prompt"], round_)
        while True:
            texts = self._round(round_)
            if texts is None:
                self._stop("max_turns_reached")
                return
            said = "\n".join(texts)
            if turns:
                if self.result.delivered_followups >= len(turns):
                    return
                turn = turns[self.result.delivered_followups]
                if turn["deliver_when"] == "agent_asks":
                    if "?" not in said:
                        self._stop("agent_did_not_ask")
                        return
                    pattern = turn.get("agent_response_matches")
                    if pattern and not self.matches(pattern, said):
                        self._stop("agent_response_mismatch")
                        return
                follow_up, origin = turn["prompt"], None
            elif responder:
                limit = responder.get("max_turns") or RESPONDER_DEFAULT_TURNS
                if self.result.delivered_followups >= limit:
                    self._stop("max_turns_reached")
                    return
                answer = self._respond(case, said)
                if answer is None:
                    return
                follow_up, origin = answer
            else:
                return
            round_ += 1
            self.result.delivered_followups += 1
            self._say(follow_up, round_, origin)

    def _say(self, text: str, round_: int, origin: dict[str, Any] | None = None) -> None:
        self.messages.append({"role": "user", "content": text})
        extra = {"origin": origin} if origin else {}
        self._event("user_message", round_, text=text, **extra)

    def _round(self, round_: int) -> list[str] | None:
        """Call the model until it stops asking for tools; its texts, None out of budget."""
        texts: list[str] = []
        while True:
            if self._out_of_budget():
                return None
            response = self.client.messages.create(
                model=self.settings.model,
                max_tokens=MAX_OUTPUT_TOKENS,
                system=self.system,
                tools=self.tools,
                messages=self.messages,
            )
            self.result.usage.add(response.usage)
            content = [block.model_dump(exclude_none=True) for block in response.content]
            self.messages.append({"role": "assistant", "content": content})
            results = []
            for block in response.content:
                if block.type == "text" and block.text.strip():
                    texts.append(block.text)
                    self.result.final_message = block.text
                    self._event("assistant_message", round_, text=block.text)
                elif block.type == "tool_use":
                    output, is_error = self.toolbox.run(block.name, block.input)
                    recorded = cap(output, RECORDED_RESULT_CHARS)
                    event = self._event(
                        "tool_invocation",
                        round_,
                        name=block.name,
                        args=block.input,
                        result=recorded,
                    )
                    self.result.tool_invocations.append(
                        {k: event[k] for k in ("name", "args", "ordinal", "result")}
                    )
                    results.append(
                        {
                            "type": "tool_result",
                            "tool_use_id": block.id,
                            "content": output,
                            "is_error": is_error,
                        }
                    )
            if response.stop_reason == "tool_use" and results:
                self.messages.append({"role": "user", "content": results})
                continue
            return texts

    def _respond(self, case: dict[str, Any], said: str) -> tuple[str, dict[str, Any]] | None:
        """The responder's next user message and its origin; None when it ends the run."""
        model = self.settings.responder_model or self.settings.model
        transcript = json.dumps(
            [e for e in self.result.events if e["type"] != "tool_invocation"], ensure_ascii=False
        )
        response = self.client.messages.create(
            model=model,
            max_tokens=1024,
            system=(
                "You play the user who asked for this task. Read the conversation and decide: "
                "reply to the agent as that user would (briefly, no code), say the task is "
                "done, or say you cannot answer. Use the respond tool."
            ),
            tools=[RESPOND_TOOL],
            tool_choice={"type": "tool", "name": "respond"},
            messages=[
                {
                    "role": "user",
                    "content": f"Original request:\n{case['prompt']}\n\nExpected outcome:\n"
                    f"{case.get('expected_output', '')}\n\nConversation so far:\n{transcript}"
                    f"\n\nThe agent's last words:\n{said}",
                }
            ],
        )
        self.result.usage.add(response.usage)
        verdict = next((b.input for b in response.content if b.type == "tool_use"), None)
        action = verdict.get("action") if isinstance(verdict, dict) else None
        rationale = str(verdict.get("rationale", "")) if isinstance(verdict, dict) else ""
        if action == "reply" and str(verdict.get("message", "")).strip():
            return str(verdict["message"]), {"responder": "llm", **_rationale(rationale)}
        if action == "done":
            self.result.responder_outcome = {"ending": "done", **_rationale(rationale)}
            return None
        cause = "declined" if action == "cannot_answer" else "malformed_verdict"
        self.result.responder_outcome = {
            "ending": "cannot_answer",
            "cause": cause,
            **_rationale(rationale),
        }
        self._stop("responder_cannot_answer")
        return None


def _rationale(text: str) -> dict[str, str]:
    return {"rationale": text} if text else {}


RESPOND_TOOL = {
    "name": "respond",
    "description": "Record the user's next move.",
    "input_schema": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["reply", "done", "cannot_answer"]},
            "message": {"type": "string", "description": "The user's reply, for action reply"},
            "rationale": {"type": "string", "description": "One line: why"},
        },
        "required": ["action"],
    },
}
