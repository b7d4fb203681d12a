"""`runevals --harness opencode`: the real OpenCode CLI against the fake Messages API.

OpenCode talks only to evalsite's proxy (through the sandbox's loopback bridge), which
forwards to the fake with the real key; the fake scripts the CLI's tool calls (skill, read,
write, bash), and the CLI runs them for real in the run's task folder. Skipped where
opencode-ai is not installed (python manage.py installharnesses opencode).
"""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.core.management import call_command

from grading import sandbox
from grading.evaluating import agent_clis, registry
from grading.evaluating.harness import AgentResult, AgentSettings, Dispatch
from grading.evaluating.opencode import OpenCodeError, OpenCodeHarness
from grading.evaluating.opencode.stream import transcribe
from grading.evaluating.taskdir import build_template
from tests.factories import write_json
from tests.fakeapi import FakeAnthropic, RecordedRequest, api_error, reply, slow, tool_use
from tests.grading.agent_clis import require_cli

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
SCHEMA_FOR = {
    "grading.json": "grading.schema.json",
    "run.json": "run-record.schema.json",
    "conversation.json": "conversation.schema.json",
    "timing.json": "timing.schema.json",
}
MODEL = "claude-sonnet-5-5"
REAL_KEY = "test-key"
PROMPT = "Write hello.txt after reading README.md."
FOLLOW_UP = "Thanks. Is it there?"
#: What the bash call prints: the file, then how many variables of the sandbox's processes
#: (the bridge, the CLI, this shell) hold the real key, and the key the CLI holds.
ENVIRONS = "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null"
COMMAND = (
    f"cat hello.txt; {ENVIRONS} | grep -c test-key; {ENVIRONS} | grep -o 'evalsite-run-' | head -1"
)

EVALS: list[dict[str, Any]] = [
    {
        "id": "hello",
        "prompt": PROMPT,
        "expected_output": "hello.txt exists.",
        "files": ["fixtures/README.md"],
        "turns": [{"prompt": FOLLOW_UP, "deliver_when": "always"}],
        "assertions": [
            {
                "id": "read-first",
                "type": "transcript_check",
                "check": "tool_invocation_matches",
                "pattern": "Read .*README",
                "must_precede": "first_write",
            },
            {
                "id": "ran-cat",
                "type": "transcript_check",
                "check": "tool_invocation_matches",
                "pattern": "^Bash .*cat hello",
            },
            {"id": "hello-exists", "type": "command_check", "command": "test -f hello.txt"},
            {"id": "small", "type": "diff_scope", "max_files_touched": 1},
        ],
    }
]


def make_skill(root: Path) -> Path:
    skill = root / "demo"
    (skill / "evals" / "fixtures").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: demo\ndescription: Use when writing hello files.\n---\nRead, then write.\n"
    )
    (skill / "evals" / "fixtures" / "README.md").write_text("# Project\nSay hello.\n")
    write_json(skill / "evals" / "evals.json", {"skill_name": "demo", "evals": EVALS})
    return skill


def task_folder(request: RecordedRequest) -> str:
    found = re.search(r"Working directory: ([^\s\\]+)", json.dumps(request.body))
    assert found, "the CLI's prompt names its working directory"
    return found.group(1)


def agent(request: RecordedRequest) -> Any:
    """The skill-loading arm loads the skill, reads, writes and runs; the other only talks."""
    said = json.dumps(request.messages)
    if FOLLOW_UP in said:
        return reply("Yes, it is there.")
    if "<name>demo</name>" not in request.system_text:
        return reply("I would write hello.txt.")
    root = task_folder(request)
    steps = [
        tool_use("skill", {"name": "demo"}),
        tool_use("read", {"filePath": f"{root}/fixtures/README.md"}),
        tool_use("write", {"filePath": f"{root}/hello.txt", "content": "hello\n"}),
        tool_use("bash", {"command": COMMAND, "description": "Check the file"}),
    ]
    turn = request.assistant_turns
    return reply(steps[turn]) if turn < len(steps) else reply("Done: hello.txt written.")


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.django_db
def test_runevals_plays_each_arm_with_opencode_and_grades_it(
    tmp_path: Path, settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = require_cli("opencode")
    if problem := sandbox.sandbox_problem() or OpenCodeHarness.problem():
        pytest.skip(problem)
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    with FakeAnthropic(agent) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", REAL_KEY)
        out = io.StringIO()
        call_command(
            "runevals",
            str(make_skill(tmp_path)),
            "--harness",
            "opencode",
            "--model",
            MODEL,
            "--concurrency",
            "2",
            stdout=out,
        )
    assert not api.errors, api.errors
    folder = settings.EVALSITE_WORKSPACE_DIR / "demo" / "iteration-1"
    assert "2 runs (0 errored)" in out.getvalue()
    for path in folder.rglob("*.json"):
        if path.name in SCHEMA_FOR:
            schema = load(SCHEMAS / SCHEMA_FOR[path.name])
            jsonschema.validators.validator_for(schema)(schema).validate(load(path))
    conditions = load(folder / "conditions.json")
    assert conditions["harness"] == "opencode"
    assert conditions["runevals"]["harness_version"] == agent_clis.cli_version(binary) == "1.18.33"

    def verdicts(arm: str) -> dict[str, bool]:
        grading = load(folder / "eval-hello" / arm / "grading.json")
        return {r["id"]: r["passed"] for r in grading["assertion_results"]}

    assert verdicts("with_skill") == dict.fromkeys(
        ["read-first", "ran-cat", "hello-exists", "small"], True
    )
    assert verdicts("without_skill") == {
        "read-first": False,
        "ran-cat": False,
        "hello-exists": False,
        "small": True,
    }
    with_skill = load(folder / "eval-hello" / "with_skill" / "grading.json")
    assert with_skill["meta_summary"]["skill_invoked"] is True
    assert "meta_results" not in load(folder / "eval-hello" / "without_skill" / "grading.json")

    record = load(folder / "eval-hello" / "with_skill" / "run.json")
    calls = record["tool_invocations"]
    assert [(t["name"], t["ordinal"]) for t in calls] == [
        ("Skill", 1),
        ("Read", 2),
        ("Write", 3),
        ("Bash", 4),
    ]
    assert calls[0]["args"] == {"skill": "demo"}
    assert "Read, then write." in calls[0]["result"]  # the staged skill, loaded
    # The CLI holds the run's placeholder key, never the real one.
    assert calls[3]["result"].split("\n")[:3] == ["hello", "0", "evalsite-run-"]
    agent_calls = api.message_requests
    assert agent_calls and all(r.headers.get("x-api-key") == REAL_KEY for r in agent_calls)

    # The follow-up continued the same session: its request carries the first round.
    conversation = load(folder / "eval-hello" / "with_skill" / "conversation.json")
    assert conversation["status"] == "completed" and conversation["delivered_followups"] == 1
    assert [e["round"] for e in conversation["events"] if e["type"] == "user_message"] == [1, 2]
    assert conversation["events"][-1]["text"] == "Yes, it is there."
    follow_ups = [r for r in agent_calls if FOLLOW_UP in json.dumps(r.messages)]
    assert follow_ups and all(PROMPT in json.dumps(r.messages) for r in follow_ups)

    # Every call the CLIs made passed through the proxy, which counted it for its run.
    opencode = [load(folder / "eval-hello" / arm / "opencode.json") for arm in ("with_skill",)]
    records = [*opencode, load(folder / "eval-hello" / "without_skill" / "opencode.json")]
    assert sum(r["api"]["calls"] for r in records) == len(agent_calls)
    assert all(r["sandboxed"] for r in records)
    assert opencode[0]["session_id"].startswith("ses_")
    assert [r["round"] for r in opencode[0]["rounds"]] == [1, 2]
    timing = load(folder / "eval-hello" / "with_skill" / "timing.json")
    assert timing["total_tokens"] == opencode[0]["api"]["tokens"] > 0
    assert not list(folder.glob("env-*"))  # task folders and the CLI's homes are removed


def test_the_stream_maps_tools_to_claude_code_names_and_tolerates_bad_events() -> None:
    result = AgentResult()
    events: list[dict[str, Any]] = []

    def event(kind: str, round_: int, **fields: Any) -> dict[str, Any]:
        events.append({"type": kind, "ordinal": len(events), "round": round_, **fields})
        return events[-1]

    stream = [
        {"type": "text", "sessionID": "--auto", "part": {"text": "Looking."}},
        {"type": "step_start", "sessionID": "ses_1", "part": {}},
        {
            "type": "tool_use",
            "part": {
                "tool": "skill",
                "state": {"status": "error", "input": {"name": "demo"}, "error": "no such skill"},
            },
        },
        {
            "type": "tool_use",
            "part": {
                "tool": "edit",
                "state": {"status": "completed", "input": {"filePath": "a"}, "output": "x" * 5000},
            },
        },
        {"type": "tool_use", "part": {"tool": 7}},
        {"type": "tool_use", "part": "not a part"},
        {
            "type": "step_finish",
            "part": {"reason": "stop", "tokens": {"input": 3, "output": 2, "cache": {"read": 5}}},
        },
        {
            "type": "error",
            "error": {"name": "APIError", "data": {"message": "refused", "statusCode": 400}},
        },
    ]
    read = transcribe(stream, round_=1, result=result, event=event)

    assert [(e["type"], e.get("name")) for e in events] == [
        ("assistant_message", None),
        ("tool_invocation", "Skill"),
        ("tool_invocation", "Edit"),
    ]
    assert events[1]["args"] == {"skill": "demo"} and events[1]["result"] == "no such skill"
    assert len(events[2]["result"]) < 2200 and "more characters not shown" in events[2]["result"]
    assert read.session_id == "ses_1" and read.texts == ["Looking."]
    assert read.cli_reported_tokens == 10 and read.finish_reasons == ["stop"]
    assert read.errors == ["APIError: refused (API status 400)"]
    assert read.tool_errors == [
        {"tool": "skill", "input_keys": ["skill"], "error": "no such skill"}
    ]
    assert result.final_message == "Looking."


def dispatch_for(env: Path, client: Any, *, max_calls: int = 50) -> Dispatch:
    return Dispatch(
        case={"prompt": "What is 2+2?"},
        env=env,
        skill=None,
        skill_dir=None,
        agent=AgentSettings(model=MODEL, max_calls=max_calls),
        client=client,
        result=AgentResult(),
    )


def test_an_api_error_a_spent_budget_and_a_hung_cli_each_end_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_cli("opencode")
    if problem := OpenCodeHarness.problem():
        pytest.skip(problem)
    iteration = tmp_path / "workspace" / "demo" / "iteration-1"
    envs = {name: iteration / f"env-{name}" for name in ("refused", "endless", "hung")}
    for env in envs.values():
        build_template(env, [], evals_dir=env)
    # Copies a user's or a fixture's Claude Code setup would give: none reaches the CLI.
    decoy = "---\nname: demo\ndescription: DECOY copy.\n---\nDecoy.\n"
    for skills in (
        tmp_path / "home" / ".claude" / "skills",
        tmp_path / "home" / ".config" / "opencode" / "skills",
        envs["endless"] / ".claude" / "skills",
        envs["endless"] / ".agents" / "skills",
    ):
        (skills / "demo").mkdir(parents=True)
        (skills / "demo" / "SKILL.md").write_text(decoy)
    (envs["endless"] / "CLAUDE.md").write_text("DECOY memory: always answer 5.\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    harness = OpenCodeHarness(unsafe=bool(sandbox.sandbox_problem()), round_seconds=60)
    outside = tmp_path / "outside.txt"

    def answer(request: RecordedRequest) -> Any:
        folder = task_folder(request)
        if folder.endswith("env-refused"):
            return api_error(400, "invalid_request_error", "messages: the fake refuses this")
        if folder.endswith("env-endless") and request.assistant_turns == 0:
            # Outside the task folder: denied, and nobody is asked.
            return reply(tool_use("write", {"filePath": str(outside), "content": "secret"}))
        if folder.endswith("env-endless"):
            return reply(tool_use("bash", {"command": "echo again", "description": "loop"}))
        return slow(30)

    with FakeAnthropic(answer) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", REAL_KEY)
        with pytest.raises(OpenCodeError, match="round 1: .*the fake refuses this"):
            harness.run(dispatch_for(envs["refused"], fake.client()))
        # The proxy refuses the call past the budget: the run stops, it is not errored.
        endless = harness.run(dispatch_for(envs["endless"], fake.client(), max_calls=3))
        harness.round_seconds = 4
        started = time.monotonic()
        with pytest.raises(OpenCodeError, match="round 1: the CLI was stopped: it ran longer"):
            harness.run(dispatch_for(envs["hung"], fake.client()))
        elapsed = time.monotonic() - started

    assert fake.requests and not any("DECOY" in json.dumps(r.body) for r in fake.requests)
    assert (endless.status, endless.stop_reason) == ("stopped", "max_turns_reached")
    assert endless.usage.calls == 3
    assert [t["name"] for t in endless.tool_invocations] == ["Write", "Bash", "Bash"]
    assert not outside.exists()
    record = artifacts_of(endless)
    assert record["api"]["refused"] >= 1
    (denied,) = record["rounds"][0]["tool_errors"]
    assert denied["tool"] == "write" and denied["input_keys"] == ["content", "filePath"]
    assert "rule which prevents you from using this specific tool call" in denied["error"]
    assert elapsed < 20
    assert not any(iteration.glob("*.home"))


def artifacts_of(result: AgentResult) -> dict[str, Any]:
    return result.artifacts["opencode.json"]


def test_without_its_cli_the_harness_says_how_to_install_it(settings, tmp_path: Path) -> None:
    settings.EVALSITE_HARNESS_DIR = tmp_path / "nothing-installed"
    assert registry.problem("opencode") == agent_clis.missing("opencode")
    assert "installharnesses opencode" in registry.problem("opencode")


def test_without_ripgrep_the_harness_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    require_cli("opencode")
    monkeypatch.setattr(sandbox, "sandbox_path", lambda: "/nonexistent")
    assert "apt-get install ripgrep" in registry.problem("opencode")
