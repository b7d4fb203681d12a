"""One eval's conversation, round by round: what every harness plays by.

The opening prompt, then after each round the follow-up rules evals were written for in
Claude Code: scripted `turns` (delivered only when the agent asks, if the eval says so), or
an `llm` responder playing the user, and a stop with its reason when the run's budget or
the script runs out. What a round is belongs to the harness: `messages/` calls the API
until the model stops asking for tools, `claude_code/` runs the CLI once.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from grading.anthropic_client import MessagesClient

from .harness import AgentResult, AgentSettings

RESPONDER_DEFAULT_TURNS = 8


class Conversation(ABC):
    """Plays one eval's conversation; each harness's subclass plays a round (`_round`)."""

    def __init__(
        self,
        client: MessagesClient,
        settings: AgentSettings,
        *,
        matches: Callable[[str, str], bool],
        result: AgentResult | None = None,
    ):
        #: The responder's client (and the messages harness's own).
        self.client = client
        self.settings = settings
        #: Whether an `agent_response_matches` pattern matches what the agent said.
        self.matches = matches
        # The caller's result, when given, so what a failed run did is still known.
        self.result = result if result is not None else AgentResult()

    @abstractmethod
    def _round(self, round_: int) -> list[str] | None:
        """Play one round; the assistant's texts, None when the run's budget ran out."""

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
        """Record the user's message; a subclass also sends it on."""
        extra = {"origin": origin} if origin else {}
        self._event("user_message", round_, text=text, **extra)

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
