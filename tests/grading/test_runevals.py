"""`manage.py runevals` end to end: the real anthropic client against our fake Messages API."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import anthropic
import jsonschema
import pytest
from django.core.management import CommandError, call_command

from grading.evaluating.folders import SkillLock
from grading.evaluating.harness import AgentResult, Dispatch
from grading.evaluating.messages import MessagesHarness
from grading.evaluating.plan import make_plan
from grading.evaluating.runner import Runner, Settings
from runs.models import Grading, Iteration, Run
from runs.warnings import messages
from tests.factories import WRITE_NOTES_EVAL, write_json
from tests.fakeapi import (
    FakeAnthropic,
    RecordedRequest,
    dropped,
    judge_verdict,
    overloaded,
    rate_limited,
    reply,
    reset,
    server_error,
    slow,
    tool_use,
)

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
SCHEMA_FOR = {
    "grading.json": "grading.schema.json",
    "run.json": "run-record.schema.json",
    "conversation.json": "conversation.schema.json",
    "benchmark.json": "benchmark.schema.json",
    "diff-scope.json": "diff-scope.schema.json",
    "timing.json": "timing.schema.json",
}

EVALS = [
    WRITE_NOTES_EVAL,
    {
        "id": "second-eval",
        "prompt": "Write notes.md again, differently.",
        "expected_output": "notes.md exists.",
        "assertions": [
            {"id": "notes-exist", "type": "command_check", "command": "test -f notes.md"}
        ],
    },
]


def make_skill(root: Path, evals: list[dict[str, Any]] | None = None, name: str = "demo") -> Path:
    skill = root / name
    (skill / "evals" / "fixtures").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Use when writing notes.\n---\nRead before writing.\n",
        encoding="utf-8",
    )
    (skill / "evals" / "fixtures" / "README.md").write_text("# Project\nIt works.\n")
    write_json(skill / "evals" / "evals.json", {"skill_name": name, "evals": evals or EVALS})
    return skill


def good_agent(request: RecordedRequest) -> Any:
    """Reads, (loads the skill when offered), writes notes.md, then says it is done."""
    if request.forced_tool:
        return judge_verdict(True, 'notes.md says "It works."', 0.9)
    if request.tool_results:
        return reply("Done: notes.md written.")
    blocks = []
    if "Skill" in request.tool_names:
        blocks.append(tool_use("Skill", {"skill": "demo"}))
    blocks += [
        tool_use("Read", {"file_path": "fixtures/README.md"}),
        tool_use("Write", {"file_path": "notes.md", "content": "It works."}),
    ]
    return reply(*blocks)


@pytest.fixture
def workspace(tmp_path: Path, settings) -> Path:
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    settings.EVALSITE_API_MAX_RETRIES = 3
    settings.EVALSITE_API_TIMEOUT = 5
    return settings.EVALSITE_WORKSPACE_DIR


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    with FakeAnthropic(good_agent) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield fake
    assert not fake.errors, fake.errors


def runevals(*args: str) -> str:
    """runevals with the messages harness: this file is about evalsite's own agent (the
    claude-code harness, the default where its extra is installed, has test_claude_code)."""
    out = io.StringIO()
    call_command("runevals", "--harness", "messages", *args, stdout=out)
    return out.getvalue()


def test_without_an_api_key_it_exits_2_before_any_work(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    skill = make_skill(tmp_path)

    with pytest.raises(CommandError) as info:
        runevals(str(skill))

    assert info.value.returncode == 2
    assert str(info.value) == (
        "ANTHROPIC_API_KEY is not set: runevals needs it to call the Anthropic API"
    )
    assert not workspace.exists()


def test_dry_run_validates_and_prints_the_plan_and_api_calls(tmp_path: Path, workspace) -> None:
    output = runevals(str(make_skill(tmp_path)), "--dry-run", "--runs", "3")

    assert output.splitlines()[0].startswith(
        "demo: new-skill, 2 evals × 2 conditions (with_skill, without_skill) = 12 runs"
    )
    assert "write-notes: 3 run(s) per condition, 4 assertion(s)" in output
    assert "API calls: 18 at least (12 agent, 6 judge)" in output
    assert not workspace.exists()


def test_a_bad_evals_json_exits_2_naming_the_file(tmp_path: Path, workspace, api) -> None:
    skill = make_skill(tmp_path)
    (skill / "evals" / "evals.json").write_text('{"skill_name": "demo", "evals": [}')

    with pytest.raises(CommandError) as info:
        runevals(str(skill))

    assert info.value.returncode == 2
    assert str(info.value).startswith(f"{skill}/evals/evals.json: invalid JSON")


def test_a_run_writes_a_schema_valid_iteration_and_imports_it(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    output = runevals(str(make_skill(tmp_path)), "--concurrency", "2")

    folder = workspace / "demo" / "iteration-1"
    for path in folder.rglob("*.json"):
        if path.name in SCHEMA_FOR:
            schema = json.loads((SCHEMAS / SCHEMA_FOR[path.name]).read_text())
            jsonschema.validators.validator_for(schema)(schema).validate(
                json.loads(path.read_text())
            )
    assert (folder / "conditions.json").is_file() and (folder / "evals.json").is_file()
    assert sorted(p.name for p in (folder / "eval-write-notes").iterdir()) == [
        "with_skill",
        "without_skill",
    ]
    run_dir = folder / "eval-write-notes" / "with_skill"
    assert (run_dir / "command-checks" / "notes-exist.json").is_file()
    assert (run_dir / "judge-responses" / "good-summary.json").is_file()
    assert not list(folder.glob("env-*"))  # task folders are removed once graded
    grading = json.loads((run_dir / "grading.json").read_text())
    assert [r["passed"] for r in grading["assertion_results"]] == [True, True, True, True]
    assert grading["meta_summary"]["skill_invoked"] is True
    iteration = Iteration.objects.get(skill__name="demo")
    assert iteration.source_kind == "eval-magic" and iteration.harness == "evalsite-runevals"
    assert Run.objects.filter(iteration=iteration).count() == 4
    assert Grading.objects.filter(run__iteration=iteration).count() == 4
    assert output.splitlines()[-1].startswith("demo #1 (iteration-1); with_skill 1.00,")
    assert "4 runs (0 errored)" in output


def test_the_agent_sees_the_skills_block_and_cached_prompts(
    tmp_path: Path, workspace, api: FakeAnthropic
) -> None:
    runevals(str(make_skill(tmp_path)), "--only", "write-notes")

    agent_calls = [r for r in api.message_requests if not r.forced_tool]
    with_skill = [r for r in agent_calls if "Skill" in r.tool_names]
    without = [r for r in agent_calls if "Skill" not in r.tool_names]
    assert with_skill and without
    assert (
        "The following skills are available for use with the Skill tool:\n\n"
        "- demo: Use when writing notes." in with_skill[0].system_text
    )
    assert "available for use with the Skill tool" not in without[0].system_text
    body = with_skill[0].body
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert {t["name"] for t in body["tools"]} >= {"Read", "Write", "Edit", "Glob", "Grep", "Bash"}


def test_scripted_turns_deliver_only_when_the_agent_asks(
    tmp_path: Path, workspace, api: FakeAnthropic
) -> None:
    evals = [
        {
            "id": "asks",
            "prompt": "Plan the change.",
            "expected_output": "A plan.",
            "turns": [
                {
                    "prompt": "Yes, go ahead.",
                    "deliver_when": "agent_asks",
                    "agent_response_matches": "(?i)shall I",
                },
                {"prompt": "Thanks.", "deliver_when": "agent_asks"},
            ],
        }
    ]

    def asking(request: RecordedRequest) -> Any:
        users = [m for m in request.messages if m["role"] == "user"]
        return reply("Shall I proceed?") if len(users) == 1 else reply("All done.")

    api.script = asking
    runevals(str(make_skill(tmp_path, evals)), "--only", "asks")

    conversation = json.loads(
        (workspace / "demo/iteration-1/eval-asks/with_skill/conversation.json").read_text()
    )
    assert conversation["status"] == "stopped"
    assert conversation["stop_reason"] == "agent_did_not_ask"
    assert conversation["delivered_followups"] == 1
    assert conversation["stopped_before_followup"] == 2
    assert [e["type"] for e in conversation["events"]] == [
        "user_message",
        "assistant_message",
        "user_message",
        "assistant_message",
    ]


def test_revision_mode_runs_old_and_new_skill(tmp_path: Path, workspace, api) -> None:
    skill = make_skill(tmp_path)
    old = tmp_path / "old"
    old.mkdir()
    (old / "SKILL.md").write_text("---\nname: demo\ndescription: The old one.\n---\nOld.\n")

    runevals(str(skill), "--mode", "revision", "--baseline", str(old))

    iteration = Iteration.objects.get()
    assert iteration.mode == "revision" and iteration.baseline == "old"
    assert list(iteration.conditions.values_list("name", "role")) == [
        ("old_skill", "control"),
        ("new_skill", "treatment"),
    ]
    old_prompts = [r.system_text for r in api.message_requests if "The old one." in r.system_text]
    assert old_prompts


def test_a_second_invocation_exits_2_while_the_lock_is_held(tmp_path: Path, workspace, api) -> None:
    skill = make_skill(tmp_path)
    with SkillLock(workspace / "demo"), pytest.raises(CommandError) as info:
        runevals(str(skill))

    assert info.value.returncode == 2
    assert str(info.value).startswith("demo is locked by runevals pid ")
    assert not api.message_requests


def test_resume_finishes_an_interrupted_iteration_without_redoing_runs(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    skill = make_skill(tmp_path)
    runevals(str(skill))
    folder = workspace / "demo" / "iteration-1"
    # Simulate a kill: one run never finished and benchmark.json was never written.
    shutil.rmtree(folder / "eval-second-eval" / "without_skill")
    (folder / "benchmark.json").unlink()
    calls_before = len(api.message_requests)

    output = runevals(str(skill), "--resume")

    new_calls = api.message_requests[calls_before:]
    assert {r.first_user_text for r in new_calls} == {"Write notes.md again, differently."}
    assert all("Skill" not in r.tool_names for r in new_calls)  # only without_skill re-ran
    assert (folder / "benchmark.json").is_file()
    assert not (workspace / "demo" / "iteration-2").exists()
    assert Run.objects.count() == 4 and Iteration.objects.count() == 1
    assert "resumed" in output


@pytest.mark.parametrize(
    "fault",
    [rate_limited(0.05), overloaded(0.05), server_error(500, retry_after_ms=50)],
    ids=["429", "529", "500"],
)
def test_transient_api_faults_are_retried(tmp_path: Path, workspace, api, fault) -> None:
    api.fail_first(2, fault)

    output = runevals(str(make_skill(tmp_path)), "--only", "second-eval", "--concurrency", "1")

    assert "0 errored" in output
    assert api.message_requests[0].status != 200
    assert Run.objects.filter(status="completed").count() == 2


@pytest.mark.parametrize(
    "fault", [dropped(), reset(), slow(1.5)], ids=["dropped", "reset", "timeout"]
)
def test_dropped_connections_and_timeouts_are_retried(
    tmp_path: Path, workspace, api: FakeAnthropic, settings, fault
) -> None:
    settings.EVALSITE_API_TIMEOUT = 0.5
    api.fail_first(1, fault)

    output = runevals(str(make_skill(tmp_path)), "--only", "second-eval", "--concurrency", "1")

    assert "0 errored" in output
    assert api.message_requests[0].status is None or api.message_requests[0].call == 1
    assert Run.objects.filter(status="completed").count() == 2


def test_a_run_that_keeps_failing_is_errored_and_kept_out_of_pass_rates(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    def flaky_api(request: RecordedRequest) -> Any:
        if request.first_user_text.startswith("Write notes.md again") and (
            "Skill" not in request.tool_names
        ):
            return server_error(503, retry_after_ms=10)
        return good_agent(request)

    api.script = flaky_api

    output = runevals(str(make_skill(tmp_path)))

    assert "1 errored" in output
    errored = Run.objects.get(status="errored")
    assert (errored.eval_id, errored.condition.name) == ("second-eval", "without_skill")
    assert not hasattr(errored, "grading") or Grading.objects.filter(run=errored).count() == 0
    iteration = Iteration.objects.get()
    assert any(
        "errored" in w and "second-eval/without_skill" in w
        for w in messages(iteration.validity_warnings)
    )
    error = json.loads(
        (workspace / "demo/iteration-1/eval-second-eval/without_skill/error.json").read_text()
    )
    assert error["type"] == "ServiceUnavailableError"


def test_fail_on_regression_exits_1_when_the_skill_makes_things_worse(
    tmp_path: Path, workspace, api: FakeAnthropic
) -> None:
    evals = [
        {
            "id": f"e{i}",
            "prompt": f"Task {i}.",
            "expected_output": "x",
            "assertions": [
                {
                    "id": "no-skill",
                    "type": "transcript_check",
                    "check": "tool_invocation_matches",
                    "pattern": "^Write",
                }
            ],
        }
        for i in range(3)
    ]

    api.script = worse_with_skill
    skill = make_skill(tmp_path, evals)

    with pytest.raises(CommandError) as info:
        runevals(str(skill), "--fail-on-regression")

    assert info.value.returncode == 1
    assert str(info.value) == "regression in demo"
    summary = Iteration.objects.get()
    assert summary.runs.count() == 6


@pytest.mark.parametrize(
    "skill", ["working-in-isolation", "auditing-slow-powers-usage", "evaluating-skills"]
)
def test_each_real_evals_json_runs_validates_and_imports(
    real_fixtures: Path, workspace: Path, api: FakeAnthropic, skill: str
) -> None:
    def generic_agent(request: RecordedRequest) -> Any:
        if request.forced_tool:
            return judge_verdict(False, "no quote supports a PASS", 0.8)
        if request.tool_results:
            return reply("Finished; see report.md.")
        return reply(tool_use("Write", {"file_path": "report.md", "content": "# Report\n"}))

    api.script = generic_agent

    output = runevals(str(real_fixtures / "slow-powers" / skill), "--concurrency", "4")

    folder = workspace / skill / "iteration-1"
    checked = 0
    for path in folder.rglob("*.json"):
        if path.name in SCHEMA_FOR:
            schema = json.loads((SCHEMAS / SCHEMA_FOR[path.name]).read_text())
            jsonschema.validators.validator_for(schema)(schema).validate(
                json.loads(path.read_text())
            )
            checked += 1
    evals = json.loads((real_fixtures / "slow-powers" / skill / "evals/evals.json").read_text())
    iteration = Iteration.objects.get(skill__name=skill)
    assert iteration.runs.count() == 2 * len(evals["evals"])
    assert checked >= 5 * iteration.runs.count()
    assert "0 errored" in output
    negative = [e["id"] for e in evals["evals"] if e.get("skill_should_trigger") is False]
    for eval_id in negative:
        grading = json.loads(
            (folder / f"eval-{eval_id}" / "with_skill" / "grading.json").read_text()
        )
        assert "meta_results" not in grading  # negative evals carry no invocation check


def test_an_llm_responder_plays_the_user_until_it_judges_the_task_done(
    tmp_path: Path, workspace, api: FakeAnthropic
) -> None:
    evals = [
        {
            "id": "chat",
            "prompt": "Help me plan.",
            "expected_output": "A plan.",
            "responder": {"type": "llm", "max_turns": 3},
        }
    ]

    def chat(request: RecordedRequest) -> Any:
        if request.forced_tool == "respond":
            if "Use the staging branch." in json.dumps(request.messages):
                return reply(tool_use("respond", {"action": "done", "rationale": "plan given"}))
            answer = {"action": "reply", "message": "Use the staging branch.", "rationale": "asked"}
            return reply(tool_use("respond", answer))
        return reply("Which branch should I use?")

    api.script = chat
    runevals(str(make_skill(tmp_path, evals)), "--only", "chat", "--concurrency", "1")

    conversation = json.loads(
        (workspace / "demo/iteration-1/eval-chat/with_skill/conversation.json").read_text()
    )
    assert conversation["status"] == "completed"
    assert conversation["delivered_followups"] == 1
    follow_up = conversation["events"][2]
    assert follow_up["text"] == "Use the staging branch."
    assert follow_up["origin"] == {"responder": "llm", "rationale": "asked"}
    assert conversation["responder_outcome"] == {"ending": "done", "rationale": "plan given"}


def test_revision_mode_takes_the_old_skill_from_a_git_ref(tmp_path: Path, workspace, api) -> None:
    skill = make_skill(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(skill)]
    import subprocess

    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "v1"], check=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: Version two.\n---\nNew.\n")

    runevals(str(skill), "--mode", "revision", "--baseline", "HEAD", "--only", "second-eval")

    systems = {r.system_text for r in api.message_requests if not r.forced_tool}
    assert any("- demo: Use when writing notes." in s for s in systems)  # old_skill, from HEAD
    assert any("- demo: Version two." in s for s in systems)  # new_skill, on disk
    assert Iteration.objects.get().baseline == "HEAD"


class FindingHarness(MessagesHarness):
    """The messages harness, plus a finding for the iteration and a file for each run."""

    def run(self, dispatch: Dispatch) -> AgentResult:
        result = super().run(dispatch)
        result.artifacts["found.json"] = {"skill": dispatch.skill_name}
        return result

    def finish_iteration(self, folder: Path) -> list[str]:
        return [f"found something in {folder.name}"]


def test_what_a_harness_finds_reaches_the_runs_and_the_iterations_warnings(
    tmp_path: Path, workspace: Path, api
) -> None:
    skill = make_skill(tmp_path, evals=EVALS[1:])
    plan = make_plan(skill, runs=1, agent_model="claude-x", judge_model="claude-judge")
    client = anthropic.Anthropic()

    result = Runner(plan, client, Settings(workspace, harness=FindingHarness())).run()

    found = json.loads(
        (result.folder / "eval-second-eval" / "without_skill" / "found.json").read_text()
    )
    assert found == {"skill": "demo"}  # the control arm knows which skill is under test
    iteration = Iteration.objects.get(skill__name="demo")
    assert "found something in iteration-1" in messages(iteration.validity_warnings)


def worse_with_skill(request: RecordedRequest) -> Any:
    """The fake agent writes a file without the skill and only reads with it: a regression
    for an eval that asserts a Write."""
    if request.tool_results:
        return reply("Done.")
    if "Skill" in request.tool_names:
        return reply(tool_use("Read", {"file_path": "fixtures/README.md"}))
    return reply(tool_use("Write", {"file_path": "a.txt", "content": "a"}))
