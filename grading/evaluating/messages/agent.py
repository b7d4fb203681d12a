"""evalsite's own agent: each round, Messages API calls with Claude Code's tools.

The loop mirrors Claude Code closely enough that evals written for it work unchanged: the
same tools (tools.py), the skills block in the system prompt, and a round that ends when
the model stops asking for tools. What follows a round is the shared `Conversation`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from grading.anthropic_client import MessagesClient
from grading.graders.rustregex import rust_search

from ..conversation import Conversation
from ..folders import HARNESS
from ..harness import (
    RECORDED_RESULT_CHARS,
    AgentResult,
    AgentSettings,
    Dispatch,
    cap,
)
from .tools import TaskFolder, Toolbox, tool_definitions

MAX_OUTPUT_TOKENS = 8192

SYSTEM_PROMPT = """You are an AI coding agent. You are working in the directory {root}, \
which is a git repository holding the files for this task. Use the tools to inspect and \
change files there and to run commands. Paths may be absolute or relative to {root}. \
When you have finished, reply with a concise summary of what you did."""

SKILLS_BLOCK = "The following skills are available for use with the Skill tool:"


class MessagesHarness:
    """evalsite's agent over the Messages API with Claude Code's tools (SPEC §6)."""

    name = HARNESS
    version = "1"

    def run(self, dispatch: Dispatch) -> AgentResult:
        staged = [dispatch.skill, *dispatch.siblings] if dispatch.skill else []
        skills = {skill.name: skill.body for skill in staged}
        descriptions = {skill.name: skill.description for skill in staged}
        conversation = MessagesConversation(
            dispatch.client,
            dispatch.agent,
            system=system_prompt(str(dispatch.env.resolve()), descriptions),
            tools=tool_definitions(with_skill=bool(skills)),
            toolbox=Toolbox(TaskFolder(dispatch.env), skills=skills),
            matches=rust_search,
            result=dispatch.result,
        )
        return conversation.run(dispatch.case)

    def finish_iteration(self, folder: Path) -> list[str]:
        return []  # its tools refuse in the task folder itself; nothing to gather


def system_prompt(root: str, skills: dict[str, str]) -> str:
    """The agent's system prompt; `skills` maps names to descriptions."""
    text = SYSTEM_PROMPT.format(root=root)
    if skills:
        lines = "\n".join(f"- {name}: {description}" for name, description in skills.items())
        text += f"\n\n{SKILLS_BLOCK}\n\n{lines}"
    return text


class MessagesConversation(Conversation):
    """A conversation whose rounds are Messages API calls, the tools run by `toolbox`."""

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
        super().__init__(client, settings, matches=matches, result=result)
        # Prompt caching: the system prompt and tools repeat across every call of every run.
        self.system = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        self.tools = [dict(t) for t in tools]
        if self.tools:
            self.tools[-1]["cache_control"] = {"type": "ephemeral"}
        self.toolbox = toolbox
        self.messages: list[dict[str, Any]] = []

    def _say(self, text: str, round_: int, origin: dict[str, Any] | None = None) -> None:
        self.messages.append({"role": "user", "content": text})
        super()._say(text, round_, origin)

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
