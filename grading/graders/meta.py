"""`__skill_invoked`: did the agent call the Skill tool for the skill under test?

A meta result, tracked apart from the assertions so it never moves the pass rate. eval-magic
writes it with grader `transcript_check` and these exact sentences (see the real baselines).

It is read from the harness's own skill tool, by the name that harness records it under
(`SKILL_TOOLS`: Claude Code's and the messages harness's `Skill`; each CLI harness adds its
own). A harness with no skill tool records no `__skill_invoked` at all: its invocation is not
observable, and is never guessed from what the agent read (SPEC §6).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .transcript import raw_tool_calls
from .verdict import Verdict

SKILL_INVOKED_ID = "__skill_invoked"
SKILL_TOOL = "Skill"
#: A skill tool's name in a transcript → the argument keys that may name the skill. Claude
#: Code's Skill tool takes {"skill": name}; older releases called the key "command".
SKILL_TOOLS: dict[str, tuple[str, ...]] = {SKILL_TOOL: ("skill", "command")}


def skill_check_applies(*, skill_loaded: bool, skill_should_trigger: bool | None) -> bool:
    """Whether a run gets the meta check: a skill was loaded and the eval expects it to fire."""
    return skill_loaded and skill_should_trigger is not False


def names_skill(
    args: Any, skill_name: str, keys: tuple[str, ...] = SKILL_TOOLS[SKILL_TOOL]
) -> bool:
    """Whether skill-tool `args` name `skill_name` (`name`, or `plugin:name`) under `keys`."""
    values = [args] if isinstance(args, str) else []
    if isinstance(args, Mapping):
        values = [args.get(key) for key in keys]
    return any(
        isinstance(value, str)
        and (value.strip() == skill_name or value.strip().endswith(f":{skill_name}"))
        for value in values
    )


def skill_invoked_check(run: Mapping[str, Any], *, skill_name: str) -> Verdict:
    """The `__skill_invoked` meta result for a run (confidence always 1.0)."""
    calls = raw_tool_calls(run)
    invoked = any(
        call.get("name") in SKILL_TOOLS
        and names_skill(call.get("args"), skill_name, SKILL_TOOLS[call.get("name")])
        for call in calls
    )
    evidence = (
        "Skill invocation verified from transcript."
        if invoked
        else f"No skill invocation found in transcript across {len(calls)} "
        "transcript invocation(s)."
    )
    return Verdict(SKILL_INVOKED_ID, invoked, evidence, grader="transcript_check")
