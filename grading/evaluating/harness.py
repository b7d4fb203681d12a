"""Harnesses: what runs one eval × condition × run's agent in its task folder.

`runevals` is one workflow over several harnesses: the runner prepares the task folder (a git
repository holding the eval's fixtures), hands the harness a `Dispatch`, and records, grades
and imports the `AgentResult` it gets back, whatever produced it. `messages` is evalsite's own
agent over the Messages API (agent.py); other harnesses drive a real agent CLI.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from grading.graders.rustregex import rust_search

from .agent import AgentResult, AgentSettings, Conversation, MessagesClient, system_prompt
from .folders import HARNESS
from .plan import SkillVersion
from .tools import TaskFolder, Toolbox, tool_definitions


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


class Harness(Protocol):
    #: Recorded as conditions.json's `harness`.
    name: str
    #: The harness's own version (the CLI's), recorded beside it.
    version: str

    def run(self, dispatch: Dispatch) -> AgentResult:
        """Play the eval's conversation; an API failure raises (the run is then errored)."""
        ...

    def finish_iteration(self, folder: Path) -> list[str]:
        """Once every run is in: write the iteration's own findings files and return the
        validity warnings they give (the importer reads eval-magic's findings files)."""
        ...


class MessagesHarness:
    """evalsite's agent over the Messages API with Claude Code's tools (SPEC §6)."""

    name = HARNESS
    version = "1"

    def run(self, dispatch: Dispatch) -> AgentResult:
        skill = dispatch.skill
        skills = {skill.name: skill.body} if skill else {}
        descriptions = {skill.name: skill.description} if skill else {}
        conversation = Conversation(
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
