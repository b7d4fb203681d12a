"""grade_run: a whole run graded into a grading.json eval-magic would have written."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from anthropic.types import Message

from grading.graders.grade import GRADERS, grade_run
from grading.graders.judge import JudgeUnavailable

from .conftest import conversation_run, make_task_dir, say, tool, user, validate, write


class FakeClient:
    """Just enough of anthropic.Anthropic for the judge: messages.create → a verdict."""

    def __init__(self, passed: bool = True) -> None:
        self.calls: list[dict[str, Any]] = []
        self.passed = passed
        self.messages = SimpleNamespace(create=self._create)

    def _create(self, **request: Any) -> Message:
        self.calls.append(request)
        verdict = {"passed": self.passed, "evidence": "final message: 'done'", "confidence": 0.8}
        return Message.model_validate(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": request["model"],
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "record_verdict", "input": verdict}
                ],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
        )


ASSERTIONS = [
    {
        "id": "ran-tests",
        "type": "transcript_check",
        "check": "tool_invocation_matches",
        "pattern": "pytest",
    },
    {"id": "explains", "type": "llm_judge", "rubric": "Does it explain the fix?"},
    {
        "id": "tests-pass",
        "type": "command_check",
        "command": "sh held/check.sh",
        "setup_files": ["held/check.sh"],
    },
    {"id": "small-diff", "type": "diff_scope", "max_files_touched": 1, "max_lines_changed": 2},
]


@pytest.fixture
def evals_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "skill" / "evals"
    write(folder / "held" / "check.sh", "grep -q fixed app.py\n")
    return folder


@pytest.fixture
def agent_task(tmp_path: Path) -> Path:
    folder = make_task_dir(tmp_path / "task", {"app.py": "broken\n"})
    write(folder / "app.py", "fixed\n")
    return folder


def run_record(*calls: dict[str, Any]) -> dict[str, Any]:
    return conversation_run(user("Fix app.py"), *calls, say("done"))


def test_it_grades_every_assertion_in_order_with_the_meta_check(
    agent_task: Path, evals_dir: Path, tmp_path: Path
) -> None:
    run = run_record(tool("Skill", {"skill": "fixing"}), tool("Bash", {"command": "pytest -q"}))
    run_dir = tmp_path / "iteration-1" / "eval-x" / "with_skill"
    client = FakeClient()
    grading = grade_run(
        run=run,
        assertions=ASSERTIONS,
        task_dir=agent_task,
        evals_dir=evals_dir,
        skill_name="fixing",
        skill_loaded=True,
        client=client,
        judge_model="claude-judge",
        run_dir=run_dir,
    )
    validate(grading, "grading.schema.json")
    results = grading["assertion_results"]
    assert [r["id"] for r in results] == ["ran-tests", "explains", "tests-pass", "small-diff"]
    assert [r["grader"] for r in results] == [a["type"] for a in ASSERTIONS]
    assert all(r["passed"] for r in results), results
    # The held-out check script landed after the diff was measured: one file, two lines.
    assert results[3]["evidence"] == (
        "files touched: 1 <= 1; lines changed: 2 <= 2 (1 added + 1 removed); hunks: 1"
    )
    assert grading["summary"] == {"passed": 4, "failed": 0, "total": 4, "pass_rate": 1.0}
    assert grading["meta_results"][0]["evidence"] == "Skill invocation verified from transcript."
    assert grading["meta_summary"] == {"passed": 1, "failed": 0, "total": 1, "skill_invoked": True}
    assert client.calls[0]["model"] == "claude-judge"

    validate(json.loads((run_dir / "diff-scope.json").read_text()), "diff-scope.schema.json")
    assert "+fixed" in (run_dir / "diff.patch").read_text()
    record = json.loads((run_dir / "command-checks" / "tests-pass.json").read_text())
    validate(record, "command-check.schema.json")
    judged = json.loads((run_dir / "judge-responses" / "explains.json").read_text())
    assert judged["usage"]["input_tokens"] == 10
    assert not (run_dir / "grading.json").exists()  # the caller writes it


def test_failures_count_against_the_pass_rate_but_the_meta_check_does_not(
    agent_task: Path, evals_dir: Path
) -> None:
    grading = grade_run(
        run=run_record(tool("Bash", {"command": "ls"})),
        assertions=ASSERTIONS,
        task_dir=agent_task,
        evals_dir=evals_dir,
        skill_name="fixing",
        skill_loaded=True,
        client=FakeClient(passed=False),
        judge_model="m",
    )
    validate(grading, "grading.schema.json")
    assert grading["summary"] == {"passed": 2, "failed": 2, "total": 4, "pass_rate": 0.5}
    assert grading["meta_summary"] == {"passed": 0, "failed": 1, "total": 1, "skill_invoked": False}
    assert grading["meta_results"][0]["evidence"] == (
        "No skill invocation found in transcript across 1 transcript invocation(s)."
    )


@pytest.mark.parametrize(("skill_loaded", "should_trigger"), [(False, True), (True, False)])
def test_no_meta_check_without_a_skill_or_for_a_negative_eval(
    task_dir: Path, skill_loaded: bool, should_trigger: bool
) -> None:
    grading = grade_run(
        run=run_record(tool("Bash", {"command": "pytest"})),
        assertions=ASSERTIONS[:1],
        task_dir=task_dir,
        skill_name="fixing",
        skill_loaded=skill_loaded,
        skill_should_trigger=should_trigger,
    )
    assert set(grading) == {"assertion_results", "summary"}


def test_no_assertions_give_a_zero_pass_rate(task_dir: Path) -> None:
    grading = grade_run(run=run_record(), assertions=[], task_dir=task_dir)
    assert grading["summary"] == {"passed": 0, "failed": 0, "total": 0, "pass_rate": 0}
    validate(grading, "grading.schema.json")


def test_without_a_task_folder_command_and_diff_checks_fail_saying_why() -> None:
    grading = grade_run(run=run_record(), assertions=ASSERTIONS[2:], task_dir=None)
    validate(grading, "grading.schema.json")
    for result in grading["assertion_results"]:
        assert result["passed"] is False
        assert result["confidence"] == 0.0
        assert result["evidence"] == "could not check: the run has no task folder"


def test_an_unknown_assertion_type_fails_it(task_dir: Path) -> None:
    grading = grade_run(
        run=run_record(), assertions=[{"id": "x", "type": "vibes"}], task_dir=task_dir
    )
    validate(grading, "grading.schema.json")
    assert grading["assertion_results"][0]["evidence"] == "unknown assertion type 'vibes'"


def test_a_judge_that_cannot_be_reached_leaves_the_run_ungraded(task_dir: Path) -> None:
    with pytest.raises(JudgeUnavailable):
        grade_run(run=run_record(), assertions=ASSERTIONS[1:2], task_dir=task_dir)


def test_the_real_evals_grade_into_valid_gradings(real_fixtures: Path, task_dir: Path) -> None:
    """Every eval of the real skills, graded against a run that did nothing much."""
    for evals_json in sorted(real_fixtures.glob("slow-powers/*/evals/evals.json")):
        data = json.loads(evals_json.read_text())
        for case in data["evals"]:
            grading = grade_run(
                run=run_record(tool("Skill", {"skill": data["skill_name"]})),
                assertions=case.get("assertions") or [],
                task_dir=task_dir,
                evals_dir=evals_json.parent,
                skill_name=data["skill_name"],
                skill_loaded=True,
                skill_should_trigger=case.get("skill_should_trigger", True),
                client=FakeClient(),
                judge_model="m",
            )
            validate(grading, "grading.schema.json")
            assert ("meta_summary" in grading) is (case.get("skill_should_trigger") is not False)


def test_every_assertion_kind_the_schema_names_has_a_grader() -> None:
    schema = json.loads((Path(__file__).parents[2] / "schemas" / "grading.schema.json").read_text())
    kinds = schema["properties"]["assertion_results"]["items"]["properties"]["grader"]["enum"]
    assert sorted(GRADERS) == sorted(kinds)


def test_the_judge_decides_while_the_diff_is_measured_and_checks_follow_the_diff(
    agent_task: Path, evals_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judge waits seconds on the API; git's work on the task folder hides behind it."""
    import threading

    from grading.graders import grade

    judged = threading.Event()
    order: list[str] = []
    measure = grade.measure_diff

    def slow_measure(task_dir: Path, **kwargs: Any) -> Any:
        # Only returns once the judge has decided: graded one after the other, it would not.
        assert judged.wait(timeout=10), "the judge waited for the diff"
        order.append("diff measured")
        return measure(task_dir, **kwargs)

    def judge(run: Any, assertion: Any, ctx: Any) -> Any:
        judged.set()
        order.append("judged")
        return grade.Verdict(assertion["id"], True, "fine", grader="llm_judge")

    command = GRADERS["command_check"]

    def checked(run: Any, assertion: Any, ctx: Any) -> Any:
        order.append("command checked")
        return command(run, assertion, ctx)

    monkeypatch.setattr(grade, "measure_diff", slow_measure)
    monkeypatch.setitem(GRADERS, "llm_judge", judge)
    monkeypatch.setitem(GRADERS, "command_check", checked)

    grading = grade_run(
        run=run_record(tool("Bash", {"command": "pytest -q"})),
        assertions=ASSERTIONS,
        task_dir=agent_task,
        evals_dir=evals_dir,
        client=FakeClient(),
        judge_model="claude-judge",
        run_dir=tmp_path / "run",
    )

    assert order == ["judged", "diff measured", "command checked"]
    results = grading["assertion_results"]
    assert [r["id"] for r in results] == ["ran-tests", "explains", "tests-pass", "small-diff"]
    assert all(r["passed"] for r in results), results
