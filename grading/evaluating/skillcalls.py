"""Which staged skill a turn loaded, read from the tool calls a harness recorded.

A skill is loaded through the harness's own skill tool (Claude Code's `Skill`, which the
messages harness mirrors): `{"skill": name}`, where Claude Code also accepts a plugin's
`plugin:name`. Only a call naming a skill that was staged counts: a call for a skill that
does not exist loaded nothing. The whole turn is read, not only its first tool call (an agent
often reads a file, then loads the skill).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SKILL_TOOL = "Skill"
LOADED = "loaded"
OTHER = "other"
NONE = "none"
#: How many of a turn's tool calls a trigger record keeps.
RECORDED_CALLS = 5


@dataclass(frozen=True)
class TurnSkills:
    """What one turn did with the staged skills."""

    #: LOADED (the skill under test), OTHER (only another staged skill) or NONE.
    outcome: str
    #: The skill under test when it was loaded, else the first other staged skill loaded,
    #: else "".
    loaded_skill: str
    #: Every staged skill the turn loaded, in order, each once.
    loaded: tuple[str, ...] = ()
    #: The turn's first tool calls, as {"name", "input"}.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def skill_named(args: Any, staged: Iterable[str]) -> str | None:
    """The staged skill a Skill call's input names (`name` or `plugin:name`), or None."""
    if not isinstance(args, Mapping):
        return None
    name = args.get("skill")
    if not isinstance(name, str):
        return None
    name = name.strip().removeprefix("/")
    for known in staged:
        if name == known or name.endswith(f":{known}"):
            return known
    return None


def turn_skills(
    tool_invocations: Sequence[Mapping[str, Any]], *, subject: str, staged: Iterable[str]
) -> TurnSkills:
    """The outcome of a finished turn: did it load `subject`, another of `staged`, or none?

    `tool_invocations` are the harness's records ({"name", "args", …}, AgentResult's). A turn
    that loaded the skill under test is LOADED even if it loaded another one first: the
    description made the agent reach for it.
    """
    names = [*dict.fromkeys([subject, *staged])]
    loaded: list[str] = []
    for call in tool_invocations:
        if call.get("name") != SKILL_TOOL:
            continue
        found = skill_named(call.get("args"), names)
        if found is not None and found not in loaded:
            loaded.append(found)
    calls = [
        {"name": str(call.get("name", "")), "input": call.get("args") or {}}
        for call in tool_invocations[:RECORDED_CALLS]
    ]
    if subject in loaded:
        return TurnSkills(LOADED, subject, tuple(loaded), calls)
    if loaded:
        return TurnSkills(OTHER, loaded[0], tuple(loaded), calls)
    return TurnSkills(NONE, "", (), calls)
