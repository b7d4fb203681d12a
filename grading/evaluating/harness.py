"""What the runner and every harness agree on: a `Dispatch` in, an `AgentResult` out.

`runevals` is one workflow over several harnesses: the runner prepares the task folder (a git
repository holding the eval's fixtures), hands the harness a `Dispatch`, and records, grades
and imports the `AgentResult` it gets back, whatever produced it. `messages/` is evalsite's
own agent over the Messages API; `claude_code/` drives the real Claude Code CLI. Both record
the conversation as eval-magic events, so the graders and the importer never ask which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from grading.anthropic_client import MessagesClient

from .plan import SkillVersion

#: Stored tool results are cut to this (run.json's schema suggests ~2 KB).
RECORDED_RESULT_CHARS = 2048
DEFAULT_MAX_CALLS = 50
DEFAULT_TOKEN_BUDGET = 2_000_000


def cap(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit} more characters not shown]"


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


@dataclass(frozen=True)
class Dispatch:
    """One run as a harness sees it."""

    #: The eval's evals.json entry, normalised (prompt, turns, responder…).
    case: dict[str, Any]
    #: The run's task folder: the only place the agent may write.
    env: Path
    #: The skill staged for this condition; None in a condition that loads no skill.
    skill: SkillVersion | None
    #: The skill's folder (SKILL.md and its other files), for harnesses that stage it whole.
    skill_dir: Path | None
    agent: AgentSettings
    #: The Anthropic client of this run (the messages harness and the `llm` responder).
    client: MessagesClient
    #: Filled in as the run goes, so an errored run still says what it did and cost.
    result: AgentResult
    #: The skill under test, in every condition: a harness looks for other copies of it.
    skill_name: str = ""
    #: Other skills staged beside `skill` (each `path` its own folder's SKILL.md), so that
    #: a trigger run measures which of them the agent loads; none in an eval run.
    siblings: tuple[SkillVersion, ...] = ()


class Harness(Protocol):
    #: Recorded as conditions.json's `harness`.
    name: str
    #: The harness's own version (the CLI's), recorded beside it.
    version: str
    # Optional: `observes_skill_calls = False` for a harness whose CLI has no skill tool, so
    # that no `__skill_invoked` is graded (grading/graders/meta.py); True when absent.

    def run(self, dispatch: Dispatch) -> AgentResult:
        """Play the eval's conversation; an API failure raises (the run is then errored)."""
        ...

    def finish_iteration(self, folder: Path) -> list[str]:
        """Once every run is in: write the iteration's own findings files and return the
        validity warnings they give (the importer reads eval-magic's findings files)."""
        ...
