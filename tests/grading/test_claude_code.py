"""`runevals --harness claude-code`: the real Claude Code CLI against the fake Messages API.

The CLI (the claude-code extra's) talks only to evalsite's proxy, which forwards to the fake
with the real key; the fake scripts the CLI's tool calls (Skill, Read, Write, Bash), and the
CLI runs them for real in the run's task folder. Tests that need the CLI skip without the
extra; the proxy's own tests always run.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import anthropic
import jsonschema
import pytest
from django.core.management import call_command

from grading import sandbox
from grading.evaluating import claude_code
from grading.evaluating.apiproxy import ApiProxy
from grading.evaluating.claude_code import (
    ClaudeCodeError,
    ClaudeCodeHarness,
    artifacts,
    permission_denials_report,
    skill_shadow_warnings,
    stage_skill,
)
from grading.evaluating.harness import AgentResult, AgentSettings, Dispatch
from grading.evaluating.plan import baseline_skill, make_plan, read_skill
from grading.evaluating.runner import Runner, Settings
from grading.evaluating.taskdir import build_template
from runs.models import Iteration, Run
from tests.factories import WRITE_NOTES_EVAL, write_json
from tests.fakeapi import (
    FakeAnthropic,
    RecordedRequest,
    api_error,
    dropped,
    judge_verdict,
    reply,
    server_error,
    slow,
    tool_use,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
SCHEMA_FOR = {
    "grading.json": "grading.schema.json",
    "run.json": "run-record.schema.json",
    "conversation.json": "conversation.schema.json",
    "timing.json": "timing.schema.json",
}
MODEL = "claude-sonnet-5-5"
#: The staged skill's line in the CLI's skills listing: present in skill-loading arms only.
LISTED = "- demo: Use when writing notes."
REAL_KEY = "test-key"

EVALS: list[dict[str, Any]] = [
    WRITE_NOTES_EVAL,
    {
        "id": "asks",
        "prompt": "Plan the change.",
        "expected_output": "A plan, after asking.",
        "turns": [
            {
                "prompt": "Yes, go ahead.",
                "deliver_when": "agent_asks",
                "agent_response_matches": "(?i)shall I",
            }
        ],
        "assertions": [
            {
                "id": "went-ahead",
                "type": "transcript_check",
                "check": "assistant_message_matches",
                "pattern": "Going ahead",
            }
        ],
    },
    {
        "id": "chat",
        "prompt": "Help me plan.",
        "expected_output": "A plan on the branch the user names.",
        "responder": {"type": "llm", "max_turns": 3},
    },
    {
        "id": "arithmetic",
        "prompt": "What is 2+2?",
        "expected_output": "4",
        "skill_should_trigger": False,
        "assertions": [
            {
                "id": "four",
                "type": "transcript_check",
                "check": "assistant_message_matches",
                "pattern": "\\b4\\b",
            }
        ],
    },
]


@pytest.fixture
def workspace(tmp_path: Path, settings) -> Path:
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    settings.EVALSITE_API_MAX_RETRIES = 2
    settings.EVALSITE_API_TIMEOUT = 10
    return settings.EVALSITE_WORKSPACE_DIR


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    with FakeAnthropic(agent) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", REAL_KEY)
        yield fake
    assert not fake.errors, fake.errors


def make_skill(root: Path, evals: list[dict[str, Any]]) -> Path:
    skill = root / "demo"
    (skill / "evals" / "fixtures").mkdir(parents=True)
    (skill / "scripts").mkdir()
    (skill / "SKILL.md").write_text(
        "---\nname: demo\ndescription: Use when writing notes.\n---\nRead before writing.\n"
    )
    (skill / "scripts" / "check.sh").write_text("#!/bin/sh\necho checked\n")
    (skill / "evals" / "fixtures" / "README.md").write_text("# Project\nIt works.\n")
    write_json(skill / "evals" / "evals.json", {"skill_name": "demo", "evals": evals})
    return skill


def task_folder(request: RecordedRequest) -> str:
    """The run's task folder, from the environment section of the CLI's prompt."""
    found = re.search(r"Primary working directory: ([^\s\\]+)", json.dumps(request.body))
    assert found, "the CLI's prompt names its working directory"
    return found.group(1)


def agent(request: RecordedRequest) -> Any:
    """Each eval's agent; the skill-loading arm loads the skill first, the other skips Read."""
    if request.forced_tool == "respond":
        said = json.dumps(request.messages)
        if "Using staging" in said:
            return reply(tool_use("respond", {"action": "done", "rationale": "plan given"}))
        answer = {"action": "reply", "message": "Use the staging branch.", "rationale": "asked"}
        return reply(tool_use("respond", answer))
    if request.forced_tool:
        return judge_verdict(True, 'notes.md says "It works."', 0.9)
    prompt, history = request.first_user_text, json.dumps(request.messages)
    if "Write notes.md" in prompt:
        root = task_folder(request)
        steps = [tool_use("Skill", {"skill": "demo"})] if LISTED in json.dumps(request.body) else []
        if steps:
            steps.append(tool_use("Read", {"file_path": f"{root}/fixtures/README.md"}))
        steps += [
            tool_use("Write", {"file_path": f"{root}/notes.md", "content": "It works.\n"}),
            tool_use("Bash", {"command": "printf 'key=%s\\n' \"$ANTHROPIC_API_KEY\""}),
        ]
        turn = request.assistant_turns
        return reply(steps[turn]) if turn < len(steps) else reply("Done: notes.md written.")
    if "Plan the change." in prompt:
        return reply("Going ahead. All done." if "Yes, go ahead." in history else "Shall I?")
    if "Help me plan." in prompt:
        staging = "Use the staging branch." in history
        return reply("Using staging. Done." if staging else "Which branch should I use?")
    return reply("It is 4.")


def runevals(*args: str) -> str:
    out = io.StringIO()
    unsafe = ["--unsafe-no-sandbox"] if sandbox.sandbox_problem() else []
    call_command("runevals", "--harness", "claude-code", *unsafe, *args, stdout=out)
    return out.getvalue()


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.django_db
def test_runevals_plays_every_eval_with_the_real_cli_and_imports_it(
    cli: Path, tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    output = runevals(str(make_skill(tmp_path, EVALS)), "--model", MODEL, "--concurrency", "4")

    folder = workspace / "demo" / "iteration-1"
    assert "8 runs (0 errored)" in output
    for path in folder.rglob("*.json"):
        if path.name in SCHEMA_FOR:
            schema = load(SCHEMAS / SCHEMA_FOR[path.name])
            jsonschema.validators.validator_for(schema)(schema).validate(load(path))
    conditions = load(folder / "conditions.json")
    assert conditions["harness"] == "claude-code"
    assert conditions["runevals"]["harness_version"] == claude_code.cli_version(cli)
    assert re.fullmatch(r"\d+\.\d+\.\d+", conditions["runevals"]["harness_version"])
    iteration = Iteration.objects.get(skill__name="demo")
    assert iteration.harness == "claude-code"
    assert Run.objects.filter(iteration=iteration, status="completed").count() == 8

    def grading(cell: str) -> dict[str, Any]:
        return load(folder / f"eval-{cell}" / "grading.json")

    def verdicts(cell: str) -> dict[str, bool]:
        return {r["id"]: r["passed"] for r in grading(cell)["assertion_results"]}

    # The CLI ran the tools: notes.md exists, the diff is the agent's one file (the staged
    # skill is not counted), and the transcript's ordinals put Read before the Write.
    assert verdicts("write-notes/with_skill") == dict.fromkeys(
        ["read-first", "good-summary", "notes-exist", "small"], True
    )
    assert verdicts("write-notes/without_skill") == {
        "read-first": False,
        "good-summary": True,
        "notes-exist": True,
        "small": True,
    }
    assert grading("write-notes/with_skill")["meta_summary"]["skill_invoked"] is True
    assert "meta_results" not in grading("write-notes/without_skill")
    assert "meta_results" not in grading("arithmetic/with_skill")  # a negative eval
    assert verdicts("arithmetic/with_skill") == {"four": True}

    record = load(folder / "eval-write-notes" / "with_skill" / "run.json")
    env = folder / "env-write-notes-with_skill"
    assert [(t["name"], t["ordinal"]) for t in record["tool_invocations"]] == [
        ("Skill", 1),
        ("Read", 2),
        ("Write", 3),
        ("Bash", 4),
    ]
    assert record["tool_invocations"][0]["args"] == {"skill": "demo"}
    assert record["tool_invocations"][2]["args"]["file_path"] == f"{env.resolve()}/notes.md"
    assert record["final_message"] == "Done: notes.md written."
    # The agent's processes hold a placeholder; only the proxy's requests carry the key.
    (bash,) = [t for t in record["tool_invocations"] if t["name"] == "Bash"]
    assert bash["result"].startswith("key=evalsite-run-") and REAL_KEY not in bash["result"]
    agent_calls = [r for r in api.message_requests if not r.forced_tool]
    assert agent_calls and all(r.headers.get("x-api-key") == REAL_KEY for r in agent_calls)
    assert all(r.body["stream"] is True and r.model == MODEL for r in agent_calls)
    assert not list(folder.glob("env-*"))  # task folders and the CLI's homes are removed

    timing = load(folder / "eval-write-notes" / "with_skill" / "timing.json")
    assert timing["total_tokens"] > 0 and timing["duration_ms"] > 0

    asked = load(folder / "eval-asks" / "with_skill" / "conversation.json")
    assert asked["status"] == "completed" and asked["delivered_followups"] == 1
    assert [(e["type"], e["round"]) for e in asked["events"]] == [
        ("user_message", 1),
        ("assistant_message", 1),
        ("user_message", 2),
        ("assistant_message", 2),
    ]
    # The follow-up resumed the same CLI session: its request carries the first round.
    follow_ups = [r for r in agent_calls if "Yes, go ahead." in json.dumps(r.messages)]
    assert len(follow_ups) == 2 and all("Shall I?" in json.dumps(r.messages) for r in follow_ups)

    chat = load(folder / "eval-chat" / "without_skill" / "conversation.json")
    assert chat["status"] == "completed" and chat["delivered_followups"] == 1
    assert chat["events"][2]["origin"] == {"responder": "llm", "rationale": "asked"}
    assert chat["responder_outcome"] == {"ending": "done", "rationale": "plan given"}


def run_plan(skill: Path, workspace: Path, **settings: Any) -> Any:
    plan = make_plan(skill, only=["write-notes"], agent_model=MODEL, judge_model=MODEL)
    harness = ClaudeCodeHarness(unsafe=bool(sandbox.sandbox_problem()))
    return Runner(
        plan, anthropic.Anthropic(), Settings(workspace=workspace, harness=harness, **settings)
    ).run()


@pytest.mark.django_db
def test_the_proxy_stops_a_run_at_its_call_budget_and_the_run_is_still_graded(
    cli: Path, tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    def endless(request: RecordedRequest) -> Any:
        if request.forced_tool:
            return judge_verdict(False, "no notes", 0.9)
        return reply(tool_use("Bash", {"command": f"echo {request.assistant_turns}"}))

    api.script = endless

    result = run_plan(make_skill(tmp_path, EVALS), workspace, max_calls=3, concurrency=2)

    assert [o.errored for o in result.outcomes] == [None, None]
    assert [o.calls for o in result.outcomes] == [3, 3]
    assert len([r for r in api.message_requests if not r.forced_tool]) == 6
    conversation = load(result.folder / "eval-write-notes" / "with_skill" / "conversation.json")
    assert (conversation["status"], conversation["stop_reason"]) == (
        "stopped",
        "max_turns_reached",
    )
    assert [e["name"] for e in conversation["events"] if e["type"] == "tool_invocation"] == [
        "Bash"
    ] * 3


@pytest.mark.django_db
def test_an_api_error_the_cli_cannot_get_past_errors_the_run(
    cli: Path, tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    refused = api_error(400, "invalid_request_error", "messages: the fake refuses this")
    api.script = lambda request: refused

    result = run_plan(make_skill(tmp_path, EVALS), workspace, concurrency=2)

    assert result.errored == 2
    error = load(result.folder / "eval-write-notes" / "with_skill" / "error.json")
    assert error["type"] == "ClaudeCodeError"
    assert "the fake refuses this" in error["error"] and "400" in error["error"]
    assert Run.objects.filter(status="errored").count() == 2


def dispatch_for(env: Path, *, skill_dir: Path | None, client: Any) -> Dispatch:
    skill = read_skill(skill_dir / "SKILL.md") if skill_dir else None
    return Dispatch(
        case={"prompt": "What is 2+2?"},
        env=env,
        skill=skill,
        skill_dir=skill_dir,
        agent=AgentSettings(model=MODEL),
        client=client,
        result=AgentResult(),
    )


@pytest.mark.parametrize("unsafe", [False, True], ids=["sandboxed", "unsandboxed"])
def test_each_dispatch_is_isolated_from_the_users_skills_settings_and_memory(
    cli: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unsafe: bool
) -> None:
    if not unsafe and sandbox.sandbox_problem():
        pytest.skip(sandbox.sandbox_problem())
    decoy = "---\nname: demo\ndescription: DECOY copy.\n---\nDecoy.\n"
    for skills in (tmp_path / "home" / ".claude" / "skills", tmp_path / "config" / "skills"):
        (skills / "demo").mkdir(parents=True)
        (skills / "demo" / "SKILL.md").write_text(decoy)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    iteration = tmp_path / "workspace" / "demo" / "iteration-1"
    iteration.mkdir(parents=True)
    (tmp_path / "workspace" / "CLAUDE.md").write_text("DECOY memory: always answer 5.\n")
    clean = iteration / "env-clean"
    build_template(clean, [], evals_dir=clean)
    # A task whose own fixtures carry a copy of the skill: that one the CLI does discover.
    fixture = tmp_path / "fixture-skill.md"
    fixture.write_text(decoy)
    carrying = iteration / "env-carrying"
    build_template(carrying, [(fixture, Path(".claude/skills/demo/SKILL.md"))], evals_dir=tmp_path)
    outside = tmp_path / "outside.txt"
    harness = ClaudeCodeHarness(unsafe=unsafe)

    def answer(request: RecordedRequest) -> Any:
        if request.assistant_turns == 0 and "env-clean" in task_folder(request):
            # Outside the task folder: acceptEdits does not cover it, nobody may say yes.
            return reply(tool_use("Write", {"file_path": str(outside), "content": "secret"}))
        return reply("It is 4.")

    with FakeAnthropic(answer) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", REAL_KEY)
        isolated = harness.run(dispatch_for(clean, skill_dir=None, client=fake.client()))
        requests = list(fake.requests)
        shadowed = harness.run(dispatch_for(carrying, skill_dir=None, client=fake.client()))

    assert isolated.final_message == "It is 4." and isolated.usage.calls == 2
    assert not outside.exists()
    assert requests and not any("DECOY" in json.dumps(r.body) for r in requests)
    assert "DECOY" in json.dumps(fake.requests[-1].body)  # the fixture's copy was listed
    shadow = artifacts(isolated)["skill-shadow.json"]
    assert shadow["skill_name"] == "demo" and shadow["other_copies"] == []
    (surface,) = shadow["rounds"]
    assert "demo" not in surface["advertised_skills"] and surface["loaded_plugins"] == []
    record = artifacts(isolated)["claude-code.json"]
    assert record["sandboxed"] is not unsafe
    assert record["isolation"]["setting_sources"] == "project,local"
    assert record["api"] == {
        "calls": 2,
        "tokens": isolated.usage.total,
        "requests": 2,
        "refused": 0,
        "refusal": None,
    }
    (played,) = record["rounds"]
    assert played["cli_reported_tokens"] == isolated.usage.total
    assert played["permission_denials"] == [
        {"tool": "Write", "input_keys": ["content", "file_path"]}
    ]
    assert artifacts(shadowed)["skill-shadow.json"]["other_copies"] == ["demo"]
    assert not (iteration / "env-clean.home").exists()

    # What the runner makes of the refusal: eval-magic's permission-denials.json.
    write_json(iteration / "eval-e1" / "without_skill" / "claude-code.json", record)
    report = permission_denials_report(iteration, number=1)
    schema = load(SCHEMAS / "permission-denials.schema.json")
    jsonschema.validators.validator_for(schema)(schema).validate(report)
    assert report["total_denials"] == 1 and report["tasks"][0]["eval_id"] == "e1"


def test_a_round_that_outruns_its_time_is_killed_and_errors_the_run(
    cli: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = tmp_path / "workspace" / "demo" / "iteration-1" / "env-slow"
    build_template(env, [], evals_dir=env)
    harness = ClaudeCodeHarness(unsafe=bool(sandbox.sandbox_problem()), round_seconds=1.5)

    with FakeAnthropic([slow(30)]) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", REAL_KEY)
        started = time.monotonic()
        with pytest.raises(ClaudeCodeError, match="round 1: the CLI was stopped: it ran longer"):
            harness.run(dispatch_for(env, skill_dir=None, client=fake.client()))
        elapsed = time.monotonic() - started

    assert 1.5 <= elapsed < 6
    assert not env.with_name("env-slow.home").exists()


def write_shadow(iteration: Path, cell: str, copies: list[str]) -> None:
    write_json(
        iteration / f"eval-{cell}" / "skill-shadow.json",
        {"skill_name": "demo", "staged": None, "other_copies": copies, "rounds": []},
    )


def test_a_copy_in_both_arms_is_a_warning_and_in_one_arm_makes_the_comparison_invalid(
    tmp_path: Path,
) -> None:
    both, one, none = tmp_path / "both", tmp_path / "one", tmp_path / "none"
    for iteration, treatment, control in (
        (both, ["plugin:demo"], ["demo"]),
        (one, [], ["demo"]),
        (none, [], []),
    ):
        write_shadow(iteration, "e1/with_skill", treatment)
        write_shadow(iteration, "e1/without_skill/run-1", control)
        write_shadow(iteration, "e1/without_skill/run-2", [])

    assert skill_shadow_warnings(both) == [
        "skill-shadow: another copy of 'demo' (demo, plugin:demo) was discoverable in every "
        "condition (with_skill: 1 run(s), e.g. e1/with_skill; without_skill: 1 run(s), e.g. "
        "e1/without_skill/run-1); both arms could load it besides the staged skill"
    ]
    (warning,) = skill_shadow_warnings(one)
    assert warning.startswith("skill-shadow: another copy of 'demo' (demo) was discoverable ")
    assert warning.endswith(
        "in without_skill only (without_skill: 1 run(s), e.g. "
        "e1/without_skill/run-1): the comparison is invalid"
    )
    assert skill_shadow_warnings(none) == []


def test_staging_copies_the_skill_folder_without_evals_and_hides_it_from_the_diff(
    tmp_path: Path,
) -> None:
    skill = make_skill(tmp_path, EVALS)
    env = tmp_path / "env"
    build_template(env, [], evals_dir=env)

    staged = stage_skill(dispatch_for(env, skill_dir=skill, client=None))

    assert staged == env / ".claude" / "skills" / "demo"
    assert sorted(p.relative_to(staged).as_posix() for p in staged.rglob("*")) == [
        "SKILL.md",
        "scripts",
        "scripts/check.sh",
    ]
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""  # .git/info/exclude keeps the staged copy out of `git add`


def test_a_git_baseline_is_staged_as_the_skill_folder_was_at_that_ref(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, EVALS)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(skill)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "v1"], check=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: Version two.\n---\nNew.\n")
    (skill / "scripts" / "check.sh").unlink()
    old, _ = baseline_skill(skill, "HEAD")
    env = tmp_path / "env"
    build_template(env, [], evals_dir=env)
    dispatch = dispatch_for(env, skill_dir=skill, client=None)

    staged = stage_skill(dataclasses.replace(dispatch, skill=old))

    assert staged is not None
    assert (staged / "SKILL.md").read_text().endswith("Read before writing.\n")
    assert (staged / "scripts" / "check.sh").read_text() == "#!/bin/sh\necho checked\n"
    assert not (staged / "evals").exists()


# --- the proxy ----------------------------------------------------------------------------


def test_the_proxy_swaps_the_key_streams_the_answer_through_and_counts_its_tokens(
    fake_api: FakeAnthropic,
) -> None:
    usage = {"input_tokens": 30, "output_tokens": 7, "cache_read_input_tokens": 100}
    fake_api.script = [
        reply("Streamed.", tool_use("Read", {"file_path": "/a"}), usage=usage),
        reply("Plain.", usage=usage),
        reply("Again.", usage=usage),
    ]
    with ApiProxy(api_key="real-key", upstream=fake_api.url) as proxy:
        lease = proxy.lease(max_calls=5, token_budget=10_000)
        client = anthropic.Anthropic(api_key=lease.key, base_url=proxy.url, max_retries=0)
        with client.messages.stream(
            model=MODEL, max_tokens=50, messages=[{"role": "user", "content": "Hi"}]
        ) as stream:
            streamed = stream.get_final_message()
        plain, again = (
            client.messages.create(
                model=MODEL, max_tokens=50, messages=[{"role": "user", "content": "Hi"}]
            )
            for _ in range(2)
        )

    assert [b.type for b in streamed.content] == ["text", "tool_use"]
    assert streamed.content[1].input == {"file_path": "/a"}
    # (The third call reuses the connection a whole, non-streamed answer left behind.)
    assert (plain.content[0].text, again.content[0].text) == ("Plain.", "Again.")
    assert [r.headers.get("x-api-key") for r in fake_api.requests] == ["real-key"] * 3
    assert not any("authorization" in r.headers for r in fake_api.requests)
    assert (lease.tally.calls, lease.tally.tokens) == (3, 3 * 137)
    assert (lease.tally.input, lease.tally.output, lease.tally.cache_read) == (90, 21, 300)


def test_the_proxy_refuses_unknown_keys_spent_budgets_and_other_endpoints(
    fake_api: FakeAnthropic,
) -> None:
    fake_api.script = [reply("one")]
    hello = {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}]}
    with ApiProxy(api_key="real-key", upstream=fake_api.url) as proxy:
        lease = proxy.lease(max_calls=1, token_budget=10_000)
        client = anthropic.Anthropic(api_key=lease.key, base_url=proxy.url, max_retries=3)
        client.messages.create(**hello)
        with pytest.raises(anthropic.BadRequestError, match="budget of 1 API calls"):
            client.messages.create(**hello)
        stranger = anthropic.Anthropic(api_key="evalsite-run-guess", base_url=proxy.url)
        with pytest.raises(anthropic.AuthenticationError, match="unknown or expired key"):
            stranger.messages.create(**hello)
        with pytest.raises(anthropic.NotFoundError, match="not forwarded"):
            client.beta.files.list()
        proxy.release(lease)
        with pytest.raises(anthropic.AuthenticationError):
            client.messages.create(**hello)

    assert fake_api.calls == 1  # the refused calls never reached the API, nor were retried
    assert (lease.tally.calls, lease.tally.refused, lease.refusal) == (
        1,
        1,
        "the run's budget of 1 API calls is used up",
    )


def test_a_call_the_api_failed_costs_nothing_and_is_the_clients_to_retry(
    fake_api: FakeAnthropic,
) -> None:
    fake_api.script = [reply("ok", usage={"input_tokens": 5, "output_tokens": 1})]
    fake_api.fail_call(1, dropped())
    fake_api.fail_call(2, server_error(503, retry_after_ms=10))
    with ApiProxy(api_key="real-key", upstream=fake_api.url) as proxy:
        lease = proxy.lease(max_calls=1, token_budget=10_000)
        client = anthropic.Anthropic(api_key=lease.key, base_url=proxy.url, max_retries=2)
        message = client.messages.create(
            model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "Hi"}]
        )

    assert message.content[0].text == "ok" and fake_api.calls == 3
    # The dropped connection came back as a 502 the client may retry, the 503 as it was.
    assert (lease.tally.requests, lease.tally.calls, lease.tally.tokens) == (3, 1, 6)
    assert lease.refusal is None


def test_concurrent_calls_cannot_together_overshoot_the_call_budget(
    fake_api: FakeAnthropic,
) -> None:
    """A CLI's subagents call the API at the same time: each admitted call holds its place
    in the budget until it is answered, so three at once under a budget of two get two."""
    from concurrent.futures import ThreadPoolExecutor

    fake_api.delay = 0.3
    fake_api.script = [reply("one"), reply("two")]
    hello = {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}]}
    with ApiProxy(api_key="real-key", upstream=fake_api.url) as proxy:
        lease = proxy.lease(max_calls=2, token_budget=10_000)
        client = anthropic.Anthropic(api_key=lease.key, base_url=proxy.url, max_retries=0)

        def call(_: int) -> str:
            try:
                return client.messages.create(**hello).content[0].type
            except anthropic.BadRequestError:
                return "refused"

        with ThreadPoolExecutor(3) as pool:
            outcomes = sorted(pool.map(call, range(3)))

    assert outcomes == ["refused", "text", "text"]
    assert fake_api.calls == 2
    assert (lease.tally.calls, lease.tally.in_flight, lease.tally.refused) == (2, 0, 1)
