"""transcript_check: SPEC §6 semantics and its exact evidence strings."""

from __future__ import annotations

import json
from typing import Any

import pytest

from grading.graders.transcript import render_invocation, transcript_check

from .conftest import conversation_run, say, tool, user, validate


def check(pattern: str, **extra: Any) -> dict[str, Any]:
    return {"id": "a", "type": "transcript_check", "pattern": pattern, **extra}


def test_it_renders_a_call_as_name_and_compact_json_in_key_order() -> None:
    args = {"command": "ls -la", "description": "list ✓", "b": [1, 2]}
    assert render_invocation("Bash", args) == (
        'Bash {"command":"ls -la","description":"list ✓","b":[1,2]}'
    )
    assert render_invocation("TodoRead", None) == "TodoRead"


def test_a_match_passes_with_its_ordinal_and_the_first_200_characters() -> None:
    long = "x" * 300
    run = conversation_run(user("go"), tool("Read", {"file_path": "a"}), tool("Bash", {"c": long}))
    result = transcript_check(run, check("Bash"))
    rendered = render_invocation("Bash", {"c": long})
    assert result.as_json() == {
        "id": "a",
        "passed": True,
        "evidence": f"matched ordinal 2: {rendered[:200]}",
        "confidence": 1.0,
        "grader": "transcript_check",
    }
    assert len(result.evidence) == len("matched ordinal 2: ") + 200


def test_no_match_fails_counting_the_invocations() -> None:
    run = conversation_run(user("go"), tool("Read", {"file_path": "a"}), say("done"))
    result = transcript_check(run, check("git worktree add"))
    assert result.passed is False
    assert result.confidence == 1.0
    assert result.evidence == "no candidate matched /git worktree add/ across 1 invocation(s)"


def test_no_tool_invocations_fails_because_the_transcript_is_missing() -> None:
    run = conversation_run(user("go"), say("done"))
    result = transcript_check(run, check(".*"))
    assert result.passed is False
    assert result.confidence == 1.0
    assert result.evidence == "no tool invocations recorded: the transcript is missing"


def test_the_search_is_unanchored_and_case_sensitive() -> None:
    run = conversation_run(user("go"), tool("Bash", {"command": "git status"}))
    assert transcript_check(run, check("status")).passed is True
    assert transcript_check(run, check("STATUS")).passed is False
    assert transcript_check(run, check("(?i)STATUS")).passed is True


def test_dot_does_not_cross_a_newline() -> None:
    run = conversation_run(user("go"), say("first line\nsecond line"))
    verdict = transcript_check(run, check("first.*second", check="assistant_message_matches"))
    assert verdict.as_json() == {
        "id": "a",
        "passed": False,
        "evidence": "no candidate matched /first.*second/ across 1 message(s)",
        "confidence": 1.0,
        "grader": "transcript_check",
    }
    assert transcript_check(
        run, check("(?s)first.*second", check="assistant_message_matches")
    ).passed


def test_dollar_matches_only_at_the_very_end_as_in_rust() -> None:
    # The JSON rendering escapes newlines, so the Rust/Python difference shows on messages.
    run = conversation_run(user("go"), say("All done\n"))
    messages = {"check": "assistant_message_matches"}
    assert transcript_check(run, check("done$", **messages)).passed is False
    assert transcript_check(run, check("done\n$", **messages)).passed is True
    assert transcript_check(run, check("(?m)done$", **messages)).passed is True


def test_lookaround_is_refused_with_a_clear_failure() -> None:
    run = conversation_run(user("go"), tool("Bash", {"command": "git status"}))
    result = transcript_check(run, check("git (?!push)"))
    assert result.passed is False
    assert result.evidence.startswith("invalid pattern /git (?!push)/: lookaround")


@pytest.mark.parametrize("pattern", [r"(a)\1", r"\p{L}+"])
def test_unsupported_syntax_is_a_failure_naming_the_pattern(pattern: str) -> None:
    run = conversation_run(user("go"), tool("Bash", {"command": "aa"}))
    result = transcript_check(run, check(pattern))
    assert result.passed is False
    assert result.evidence.startswith(f"invalid pattern /{pattern}/: ")


def test_must_precede_any_accepts_a_match_anywhere() -> None:
    run = conversation_run(
        user("go"), tool("Write", {"file_path": "x"}), tool("Bash", {"command": "pytest"})
    )
    result = transcript_check(run, check("pytest", must_precede="any"))
    assert result.evidence.startswith("matched ordinal 2: Bash")


def test_first_write_needs_a_match_strictly_before_the_first_write() -> None:
    run = conversation_run(
        user("go"),
        tool("Read", {"file_path": "a.py"}),
        tool("Edit", {"file_path": "a.py"}),
        tool("Bash", {"command": "git checkout -b fix"}),
        tool("Bash", {"command": "git checkout -b again"}),
    )
    result = transcript_check(run, check("checkout -b", must_precede="first_write"))
    assert result.passed is False
    assert result.evidence == (
        "2 match(es) of /checkout -b/ occurred, but none before the first write"
    )
    assert transcript_check(run, check("Read", must_precede="first_write")).passed is True
    # The write itself is not before the first write.
    assert transcript_check(run, check("Edit", must_precede="first_write")).passed is False


@pytest.mark.parametrize("writer", ["Write", "Edit", "MultiEdit", "NotebookEdit"])
def test_every_write_tool_counts_as_a_write(writer: str) -> None:
    run = conversation_run(user("go"), tool(writer, {"p": 1}), tool("Bash", {"command": "ls"}))
    assert transcript_check(run, check("ls", must_precede="first_write")).passed is False


def test_first_write_has_no_limit_when_nothing_is_written() -> None:
    run = conversation_run(user("go"), say("thinking"), tool("Bash", {"command": "ls"}))
    result = transcript_check(run, check("ls", must_precede="first_write"))
    assert result.evidence == 'matched ordinal 2: Bash {"command":"ls"}'


def test_completion_claim_needs_a_match_before_the_last_assistant_message() -> None:
    run = conversation_run(
        user("go"),
        say("Working on it"),
        tool("Bash", {"command": "pytest"}),
        say("All tests pass"),
    )
    messages = {"check": "assistant_message_matches", "must_precede": "completion_claim"}
    assert transcript_check(run, check("Working", **messages)).passed is True
    late = transcript_check(run, check("tests pass", **messages))
    assert late.passed is False
    assert late.evidence == (
        "1 match(es) of /tests pass/ occurred, but none before the completion claim"
    )
    tools = transcript_check(run, check("pytest", must_precede="completion_claim"))
    assert tools.evidence == 'matched ordinal 2: Bash {"command":"pytest"}'


def test_a_tool_call_after_the_completion_claim_does_not_count() -> None:
    run = conversation_run(
        user("go"), say("Done."), tool("Bash", {"command": "pytest"}), say("Really done.")
    )
    early = conversation_run(user("go"), say("Done."), tool("Bash", {"command": "pytest"}))
    assert transcript_check(run, check("pytest", must_precede="completion_claim")).passed
    result = transcript_check(early, check("pytest", must_precede="completion_claim"))
    assert result.evidence == (
        "1 match(es) of /pytest/ occurred, but none before the completion claim"
    )


def test_ordinals_count_every_event_of_the_conversation() -> None:
    run = conversation_run(
        user("go"), say("a"), say("b"), tool("Bash", {"command": "x"}), user("more")
    )
    assert transcript_check(run, check("Bash")).evidence.startswith("matched ordinal 3: ")


def test_without_a_conversation_the_recorded_tool_ordinals_are_used() -> None:
    run = conversation_run(user("go"), say("hi"), tool("Bash", {"command": "x"}))
    del run["conversation"]
    assert run["tool_invocations"][0]["ordinal"] == 2
    assert (
        transcript_check(run, check("Bash")).evidence == 'matched ordinal 2: Bash {"command":"x"}'
    )
    # The final message stands in for the assistant messages.
    assert transcript_check(run, check("hi", check="assistant_message_matches")).passed


def test_it_reproduces_eval_magic_evidence_from_the_real_baseline(real_fixtures) -> None:
    skill = real_fixtures / "slow-powers" / "working-in-isolation" / "evals"
    grading = json.loads(
        (skill / "baseline/grading/base-branch-checkout__with_skill.json").read_text()
    )
    recorded = next(r for r in grading["assertion_results"] if r["id"] == "ran_branch_command")
    evals = json.loads((skill / "evals.json").read_text())
    case = next(e for e in evals["evals"] if e["id"] == "base-branch-checkout")
    assertion = next(a for a in case["assertions"] if a["id"] == "ran_branch_command")
    args = {
        "command": "git branch --show-current && git status --porcelain && git worktree list",
        "description": "Check current branch, tree cleanliness, and worktrees",
    }
    run = conversation_run(user(case["prompt"]), tool("Skill", {"skill": "x"}), tool("Bash", args))
    result = transcript_check(run, assertion)
    assert result.passed is True
    assert result.evidence == recorded["evidence"]


def test_results_fit_the_grading_schema() -> None:
    run = conversation_run(user("go"), tool("Bash", {"command": "x"}))
    results = [transcript_check(run, check(p)).as_json() for p in ("x", "y", "(?=z)")]
    validate(
        {
            "assertion_results": results,
            "summary": {"passed": 1, "failed": 2, "total": 3, "pass_rate": 1 / 3},
        },
        "grading.schema.json",
    )


@pytest.mark.parametrize(
    ("write", "args"),
    [
        ("write_file", {"file_path": "a.py"}),  # Gemini CLI
        ("replace", {"file_path": "a.py"}),
        ("file_change", {"changes": [{"path": "a.py", "kind": "update"}]}),  # Codex
        ("editor", {"command": "str_replace", "path": "a.py"}),  # Cline
        ("editor", {"command": "create", "path": "a.py"}),
    ],
)
def test_first_write_knows_each_harness_write_tool(write: str, args: dict) -> None:
    run = conversation_run(
        user("go"), tool(write, args), tool("run_shell_command", {"command": "git checkout -b x"})
    )
    assert transcript_check(run, check("checkout -b", must_precede="first_write")).passed is False


def test_a_cline_editor_view_is_not_a_write() -> None:
    run = conversation_run(
        user("go"),
        tool("editor", {"command": "view", "path": "a.py"}),
        tool("run_commands", {"commands": ["git checkout -b x"]}),
    )
    assert transcript_check(run, check("checkout -b", must_precede="first_write")).passed is True
