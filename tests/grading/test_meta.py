"""__skill_invoked: the meta check that the agent loaded the skill under test."""

from __future__ import annotations

import pytest

from grading.graders.meta import skill_check_applies, skill_invoked_check

from .conftest import conversation_run, say, tool, user


@pytest.mark.parametrize(
    "args",
    [
        {"skill": "working-in-isolation"},
        {"skill": "slow-powers:working-in-isolation"},
        {"command": "working-in-isolation"},  # older Claude Code transcripts
    ],
)
def test_a_skill_call_naming_the_skill_passes(args: dict[str, str]) -> None:
    run = conversation_run(user("go"), tool("Read", {"file_path": "x"}), tool("Skill", args))
    assert skill_invoked_check(run, skill_name="working-in-isolation").as_json() == {
        "id": "__skill_invoked",
        "passed": True,
        "evidence": "Skill invocation verified from transcript.",
        "confidence": 1.0,
        "grader": "transcript_check",
    }


@pytest.mark.parametrize(
    "calls",
    [
        [tool("Skill", {"skill": "other-skill"})],
        [tool("Skill", {"skill": "working-in-isolation-v2"})],
        [tool("Bash", {"command": "cat working-in-isolation/SKILL.md"})],
    ],
)
def test_other_calls_do_not_count(calls: list) -> None:
    run = conversation_run(user("go"), *calls, tool("Read", {"file_path": "x"}), say("done"))
    result = skill_invoked_check(run, skill_name="working-in-isolation")
    assert result.passed is False
    assert result.confidence == 1.0
    assert result.evidence == (
        "No skill invocation found in transcript across 2 transcript invocation(s)."
    )


def test_a_run_without_tool_calls_fails_counting_none() -> None:
    run = conversation_run(user("go"), say("done"))
    result = skill_invoked_check(run, skill_name="demo")
    assert result.evidence == (
        "No skill invocation found in transcript across 0 transcript invocation(s)."
    )


def test_it_applies_only_to_skill_loading_runs_of_evals_expected_to_trigger() -> None:
    assert skill_check_applies(skill_loaded=True, skill_should_trigger=True)
    assert skill_check_applies(skill_loaded=True, skill_should_trigger=None)
    assert not skill_check_applies(skill_loaded=True, skill_should_trigger=False)
    assert not skill_check_applies(skill_loaded=False, skill_should_trigger=True)


def test_a_harness_skill_tool_counts_under_its_own_name_and_keys(monkeypatch) -> None:
    from grading.graders import meta

    monkeypatch.setitem(meta.SKILL_TOOLS, "activate_skill", ("name",))
    run = conversation_run(user("go"), tool("activate_skill", {"name": "working-in-isolation"}))
    assert skill_invoked_check(run, skill_name="working-in-isolation").passed
    # Its key is its own: a Skill-style key under another tool's name is not read.
    other = conversation_run(user("go"), tool("activate_skill", {"skill": "working-in-isolation"}))
    assert not skill_invoked_check(other, skill_name="working-in-isolation").passed


def test_a_harness_without_a_skill_tool_grades_no_skill_invocation() -> None:
    from grading.graders.grade import grade_run

    run = conversation_run(user("go"), tool("Bash", {"command": "cat SKILL.md"}), say("done"))
    observed = grade_run(run=run, assertions=[], task_dir=None, skill_name="s", skill_loaded=True)
    assert observed["meta_results"][0]["passed"] is False
    unobserved = grade_run(
        run=run,
        assertions=[],
        task_dir=None,
        skill_name="s",
        skill_loaded=True,
        skill_observable=False,
    )
    assert "meta_results" not in unobserved
