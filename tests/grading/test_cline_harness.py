"""`runevals --harness cline`: the real Cline CLI against the fake chat-completions API.

The CLI talks only to evalsite's proxy (through the loopback bridge inside its sandbox), which
forwards to the fake with the real key; the fake scripts the CLI's tool calls (`skills`,
`editor`, `run_commands`) and the CLI runs them for real in the run's task folder. Tests that
need the CLI skip without it; the wire's and the stream's own tests always run.
"""

from __future__ import annotations

import io
import json
import time
from email.message import Message
from pathlib import Path
from typing import Any

import anthropic
import jsonschema
import pytest
from django.core.management import call_command

from grading import sandbox
from grading.evaluating import agent_clis, registry
from grading.evaluating.claude_code.staging import stage_skill
from grading.evaluating.cline import SKILLS_DIR, ClineError, ClineHarness, cli_version
from grading.evaluating.cline.findings import skill_shadow
from grading.evaluating.cline.stream import partial_text, transcribe
from grading.evaluating.cline.wire import CHAT, ChatUsageMeter
from grading.evaluating.harness import AgentResult, AgentSettings, Dispatch
from grading.evaluating.plan import make_plan, read_skill
from grading.evaluating.runner import Runner, Settings
from runs.models import Iteration, Run
from tests.factories import write_json
from tests.fake_chat import ChatRequest, FakeChat, api_error, reply, tool_call
from tests.grading.agent_clis import require_cli

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
SCHEMA_FOR = {
    "grading.json": "grading.schema.json",
    "run.json": "run-record.schema.json",
    "conversation.json": "conversation.schema.json",
    "timing.json": "timing.schema.json",
}
#: Not a GPT name: for those the CLI offers `apply_patch` instead of its `editor` tool.
MODEL = "fake-coder"
REAL_KEY = "sk-real-openai-key"
#: The `skills` tool's description lists the staged skills: in skill-loading arms only.
LISTED = "Available skills: demo."

EVALS: list[dict[str, Any]] = [
    {
        "id": "write-notes",
        "prompt": "Write notes.md summarising README.md.",
        "expected_output": "notes.md exists and summarises the README.",
        "files": ["fixtures/README.md"],
        "assertions": [
            {
                "id": "ran-check",
                "type": "transcript_check",
                "check": "tool_invocation_matches",
                "pattern": "run_commands .*scripts/check.sh",
            },
            {"id": "notes-exist", "type": "command_check", "command": "test -f notes.md"},
            {"id": "small", "type": "diff_scope", "max_files_touched": 1},
        ],
    },
    {
        "id": "asks",
        "prompt": "Plan.",  # one word: the CLI refuses one as a mistyped command
        "expected_output": "A plan, after asking.",
        "turns": [{"prompt": "Yes, go ahead.", "deliver_when": "agent_asks"}],
    },
]


@pytest.fixture
def cli() -> Path:
    return require_cli("cline")


@pytest.fixture
def workspace(tmp_path: Path, settings) -> Path:
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    return settings.EVALSITE_WORKSPACE_DIR


def agent(request: ChatRequest) -> Any:
    """The with-skill arm loads the skill, writes notes.md and runs commands; the other
    answers in words; asked to plan, the agent asks before it goes ahead."""
    if request.first_user_text == "Plan.":
        return reply("Shall I go ahead?")
    if LISTED not in json.dumps(request.body.get("tools")):
        return reply("I would summarise the README.")
    steps = [
        tool_call("skills", {"skill": "demo"}),
        tool_call("editor", {"path": "notes.md", "new_text": "It works.\n"}),
        tool_call(
            "run_commands",
            {
                "commands": [
                    "sh .cline/skills/demo/scripts/check.sh",
                    'printf \'key=%s\\n\' "$OPENAI_API_KEY"; cat "$CLINE_DIR"/data/settings/*',
                    "python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1],"
                    f' timeout=3); print("REACHED")\' {AGENT_SEES_URL[0]} 2>&1 | tail -1',
                ]
            },
        ),
    ]
    turn = request.assistant_turns
    return reply(steps[turn]) if turn < len(steps) else reply("Done: notes.md written.")


#: The fake's own address, which a sandboxed agent cannot reach (set once the fake runs).
AGENT_SEES_URL = [""]


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    with FakeChat(agent, api_key=REAL_KEY, models=[MODEL]) as fake:
        AGENT_SEES_URL[0] = fake.base_url + "/models"
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "unused-anthropic-key")
        yield fake
    assert not fake.errors, fake.errors


def make_skill(root: Path) -> Path:
    skill = root / "demo"
    (skill / "evals" / "fixtures").mkdir(parents=True)
    (skill / "scripts").mkdir()
    (skill / "SKILL.md").write_text(
        "---\nname: demo\ndescription: Use when writing notes.\n---\nRun scripts/check.sh.\n"
    )
    (skill / "scripts" / "check.sh").write_text("#!/bin/sh\necho checked\n")
    (skill / "evals" / "fixtures" / "README.md").write_text("# Project\nIt works.\n")
    write_json(skill / "evals" / "evals.json", {"skill_name": "demo", "evals": EVALS})
    return skill


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.django_db
def test_runevals_plays_each_arm_with_the_real_cline_cli_and_grades_it(
    cli: Path, tmp_path: Path, workspace: Path, api: FakeChat
) -> None:
    out = io.StringIO()
    unsafe = ["--unsafe-no-sandbox"] if sandbox.sandbox_problem() else []
    call_command(
        "runevals",
        "--harness",
        "cline",
        *unsafe,
        str(make_skill(tmp_path)),
        "--model",
        MODEL,
        stdout=out,
    )

    folder = workspace / "demo" / "iteration-1"
    assert "4 runs (2 errored)" in out.getvalue()
    for path in folder.rglob("*.json"):
        if path.name in SCHEMA_FOR:
            schema = load(SCHEMAS / SCHEMA_FOR[path.name])
            jsonschema.validators.validator_for(schema)(schema).validate(load(path))
    conditions = load(folder / "conditions.json")
    assert conditions["harness"] == "cline"
    assert conditions["runevals"]["harness_version"] == cli_version(cli.resolve()) == "3.0.65"
    assert Iteration.objects.get(skill__name="demo").harness == "cline"
    assert Run.objects.filter(status="completed").count() == 2
    # The CLI cannot take a follow-up: a run whose follow-up is due errors, saying why.
    for arm in ("with_skill", "without_skill"):
        error = load(folder / "eval-asks" / arm / "error.json")
        assert error["type"] == "ClineError"
        assert "cannot resume a session headless" in error["error"], error

    def grading(arm: str) -> dict[str, Any]:
        return load(folder / "eval-write-notes" / arm / "grading.json")

    def verdicts(arm: str) -> dict[str, bool]:
        return {r["id"]: r["passed"] for r in grading(arm)["assertion_results"]}

    assert verdicts("with_skill") == {"ran-check": True, "notes-exist": True, "small": True}
    assert verdicts("without_skill") == {"ran-check": False, "notes-exist": False, "small": True}
    assert grading("with_skill")["meta_summary"]["skill_invoked"] is True
    assert "meta_results" not in grading("without_skill")

    record = load(folder / "eval-write-notes" / "with_skill" / "run.json")
    calls = record["tool_invocations"]
    assert [(c["name"], c["ordinal"]) for c in calls] == [
        ("Skill", 1),
        ("editor", 2),
        ("run_commands", 3),
    ]
    assert calls[0]["args"] == {"skill": "demo"}
    assert "Run scripts/check.sh." in calls[0]["result"]  # the skill's body, loaded
    assert calls[2]["args"]["command"].startswith("sh .cline/skills/demo/scripts/check.sh\n")
    assert record["final_message"] == "Done: notes.md written."
    # The CLI holds a placeholder key, in its environment and its settings; only the proxy's
    # requests carry the real one.
    shown = calls[2]["result"]
    assert "checked" in shown and "key=\n" in shown and "evalsite-run-" in shown
    assert REAL_KEY not in shown
    assert all(r.headers["authorization"] == f"Bearer {REAL_KEY}" for r in api.chat_requests)
    assert all(r.body["stream"] is True and r.model == MODEL for r in api.chat_requests)

    # Every call the CLI made went through the proxy and was counted for its run.
    arms = ("with_skill", "without_skill")
    counted = [load(folder / "eval-write-notes" / arm / "cline.json") for arm in arms]
    assert [c["api"]["calls"] for c in counted] == [4, 1]
    # No other request reached the proxy (a model listing, a token count): one route is all.
    assert [c["api"]["requests"] for c in counted] == [4, 1]
    asked = [load(folder / "eval-asks" / arm / "cline.json")["api"]["calls"] for arm in arms]
    assert asked == [1, 1]
    assert sum(c["api"]["calls"] for c in counted) + 2 == len(api.chat_requests) == api.calls
    assert all(
        c["api"]["refused"] == 0 and c["rounds"][0]["finish_reason"] == "completed" for c in counted
    )
    timing = load(folder / "eval-write-notes" / "with_skill" / "timing.json")
    assert timing["total_tokens"] > 0
    if not unsafe:
        assert all(c["sandboxed"] for c in counted)
        # The network is the sandbox's own loopback: the fake itself is out of reach.
        assert "REACHED" not in shown and "Connection refused" in shown
    assert not list(folder.glob("env-*"))  # task folders and the CLI's homes are removed


@pytest.mark.django_db
def test_the_proxy_stops_a_run_at_its_call_budget_and_the_run_is_still_graded(
    cli: Path, tmp_path: Path, workspace: Path, api: FakeChat
) -> None:
    def endless(request: ChatRequest) -> Any:
        return reply(tool_call("run_commands", {"commands": [f"echo {request.assistant_turns}"]}))

    api.script = endless
    plan = make_plan(
        make_skill(tmp_path), only=["write-notes"], agent_model=MODEL, judge_model=MODEL
    )
    harness = ClineHarness(unsafe=bool(sandbox.sandbox_problem()))
    settings = Settings(workspace=workspace, harness=harness, max_calls=2, concurrency=2)

    result = Runner(plan, anthropic.Anthropic(), settings).run()

    assert [o.errored for o in result.outcomes] == [None, None]
    assert [o.calls for o in result.outcomes] == [2, 2]
    assert len(api.chat_requests) == 4  # the refused third calls never reached the API
    conversation = load(result.folder / "eval-write-notes" / "with_skill" / "conversation.json")
    assert (conversation["status"], conversation["stop_reason"]) == (
        "stopped",
        "max_turns_reached",
    )
    assert [e["name"] for e in conversation["events"] if e["type"] == "tool_invocation"] == [
        "run_commands"
    ] * 2
    record = load(result.folder / "eval-write-notes" / "with_skill" / "cline.json")
    assert record["api"]["refused"] >= 1 and "2 API calls" in record["api"]["refusal"]


@pytest.mark.django_db
def test_an_api_error_the_cli_cannot_get_past_errors_the_run(
    cli: Path, tmp_path: Path, workspace: Path, api: FakeChat
) -> None:
    api.script = lambda request: api_error(400, "messages: the fake refuses this")
    plan = make_plan(
        make_skill(tmp_path), only=["write-notes"], agent_model=MODEL, judge_model=MODEL
    )
    harness = ClineHarness(unsafe=bool(sandbox.sandbox_problem()))

    result = Runner(
        plan, anthropic.Anthropic(), Settings(workspace=workspace, harness=harness)
    ).run()

    assert result.errored == 2
    error = load(result.folder / "eval-write-notes" / "with_skill" / "error.json")
    assert error["type"] == "ClineError" and "the fake refuses this" in error["error"]
    assert Run.objects.filter(status="errored").count() == 2
    assert len(api.chat_requests) == 2  # a 400 is final: the CLI did not retry it


def test_a_round_that_outruns_its_time_is_killed_and_errors_the_run(
    cli: Path, tmp_path: Path, api: FakeChat
) -> None:
    api.delay = 30
    env = tmp_path / "env"
    env.mkdir()
    dispatch = Dispatch(
        case={"prompt": "What is 2+2?"},
        env=env,
        skill=None,
        skill_dir=None,
        agent=AgentSettings(model=MODEL),
        client=None,  # type: ignore[arg-type]
        result=AgentResult(),
        skill_name="demo",
    )
    harness = ClineHarness(unsafe=bool(sandbox.sandbox_problem()), round_seconds=3)

    started = time.monotonic()
    with pytest.raises(ClineError, match="the CLI was stopped") as stopped:
        harness.run(dispatch)

    assert stopped.value.timed_out and time.monotonic() - started < 20
    assert dispatch.result.artifacts["cline.json"]["api"]["calls"] == 0
    assert not env.with_name("env.home").exists()


def test_the_harness_says_why_it_cannot_run(monkeypatch: pytest.MonkeyPatch, settings) -> None:
    binary = require_cli("cline")
    monkeypatch.setenv("OPENAI_API_KEY", "")
    assert "needs OPENAI_API_KEY" in (registry.problem("cline") or "")
    monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)
    assert registry.problem("cline") is None
    settings.EVALSITE_HARNESS_DIR = str(binary.parents[3] / "nowhere")
    assert registry.problem("cline") == agent_clis.missing("cline")


# --- the wire ------------------------------------------------------------------------------


def headers(**values: str) -> Message:
    message = Message()
    for name, value in values.items():
        message[name.replace("_", "-")] = value
    return message


def test_the_wire_forwards_only_the_clis_route_and_reads_its_bearer_key() -> None:
    assert CHAT.forwarded_target("POST", "/chat/completions?x=1") == "/chat/completions"
    for method, target in [
        ("GET", "/chat/completions"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/chat/completions/"),
        ("POST", "/chat%2Fcompletions"),
        ("POST", "//chat/completions"),
        ("GET", "/models"),
        ("POST", "/responses"),
    ]:
        assert CHAT.forwarded_target(method, target) is None, (method, target)
    assert CHAT.key_of(headers(authorization="Bearer evalsite-run-x"), "") == "evalsite-run-x"
    assert CHAT.key_of(headers(authorization="bearer  k "), "") == "k"
    assert CHAT.key_of(headers(authorization="Basic abc"), "") is None
    assert CHAT.key_of(headers(x_api_key="k"), "") is None
    assert CHAT.upstream_headers("real") == {"authorization": "Bearer real"}
    error = json.loads(CHAT.error_body(401, "authentication_error", "unknown key"))
    assert error == {
        "error": {
            "message": "unknown key",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }


def test_the_wire_reads_usage_from_the_last_chunk_of_a_stream_or_a_json_answer() -> None:
    usage = {
        "prompt_tokens": 120,
        "completion_tokens": 7,
        "total_tokens": 127,
        "prompt_tokens_details": {"cached_tokens": 100},
    }
    meter = ChatUsageMeter("text/event-stream; charset=utf-8")
    body = (
        'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'
        'data: {"choices":[],"usage":' + json.dumps(usage) + "}\n\ndata: [DONE]\n\n"
    ).encode()
    for i in range(0, len(body), 7):  # in pieces that cut lines anywhere
        meter.feed(body[i : i + 7])
    assert meter.usage() == {
        "input_tokens": 20,
        "output_tokens": 7,
        "cache_read_input_tokens": 100,
    }
    answer = ChatUsageMeter("application/json")
    answer.feed(json.dumps({"choices": [], "usage": {"prompt_tokens": 5}}).encode())
    assert answer.usage() == {"input_tokens": 5, "output_tokens": 0, "cache_read_input_tokens": 0}
    hostile = ChatUsageMeter("application/json")
    hostile.feed(
        b'{"usage": {"prompt_tokens": -3, "completion_tokens": "9", '
        b'"prompt_tokens_details": {"cached_tokens": 99}}}'
    )
    assert hostile.usage() == {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0}
    assert ChatUsageMeter("application/json").usage() == {}


# --- the stream ----------------------------------------------------------------------------


def agent_event(**event: Any) -> dict[str, Any]:
    return {"ts": "2026-12-02T16:19:30.882Z", "type": "agent_event", "event": event}


def test_the_clis_lines_become_conversation_events_with_the_skill_call_as_skill() -> None:
    lines = [
        {"type": "hook_event", "hookEventName": "agent_start"},
        agent_event(
            type="content_start",
            contentType="tool",
            toolName="skills",
            toolCallId="c1",
            input={"skill": "demo"},
        ),
        agent_event(
            type="content_end",
            contentType="tool",
            toolName="skills",
            toolCallId="c1",
            output="<command-name>demo</command-name>",
        ),
        agent_event(
            type="content_start",
            contentType="tool",
            toolName="run_commands",
            toolCallId="c2",
            input={"commands": ["ls", "cat a"]},
        ),
        agent_event(
            type="content_end",
            contentType="tool",
            toolName="run_commands",
            toolCallId="c2",
            output=[
                {"query": "ls", "result": "a\n", "success": True},
                {"query": "cat a", "result": "x" * 5000},
            ],
        ),
        agent_event(
            type="content_start",
            contentType="tool",
            toolName="editor",
            toolCallId="c3",
            input={"path": "a", "new_text": "b"},
        ),
        agent_event(
            type="content_end",
            contentType="tool",
            toolName="editor",
            toolCallId="c3",
            error="Editor operation failed: no",
        ),
        {"type": "hook_event", "hookEventName": "agent_start", "parentAgentId": "agent_1"},
        agent_event(
            type="content_start",
            contentType="tool",
            toolName="read_files",
            toolCallId="s1",
            input={"files": [{"path": "a"}]},
        ),
        agent_event(type="content_end", contentType="text", text="sub done"),
        {"type": "hook_event", "hookEventName": "agent_end", "parentAgentId": "agent_1"},
        agent_event(type="content_start", contentType="text", text="Do", accumulated="Do"),
        agent_event(type="content_end", contentType="text", text="Done?"),
        agent_event(type="content_end", contentType="text", text="  "),
        {"type": "run_result", "finishReason": "completed", "text": "Done?"},
    ]
    result = AgentResult()
    events: list[dict[str, Any]] = []

    def event(kind: str, round_: int, **fields: Any) -> dict[str, Any]:
        events.append({"type": kind, "ordinal": len(events), "round": round_, **fields})
        return events[-1]

    read = transcribe(lines, round_=1, result=result, event=event)  # type: ignore[arg-type]

    assert [(e["type"], e.get("name")) for e in events] == [
        ("tool_invocation", "Skill"),
        ("tool_invocation", "run_commands"),
        ("tool_invocation", "editor"),
        ("tool_invocation", "read_files"),
        ("assistant_message", None),
    ]
    assert read.subagent_calls == [3]  # the subagent's call is recorded, its text is not
    assert events[0]["args"] == {"skill": "demo"}
    assert events[1]["args"] == {"command": "ls\ncat a"}
    assert (
        events[1]["result"].startswith("a\n\nxxx")
        and "more characters not shown" in (events[1]["result"])
    )
    assert events[2]["result"] == "Editor operation failed: no"
    assert result.tool_invocations[0] == {
        "name": "Skill",
        "args": {"skill": "demo"},
        "ordinal": 0,
        "result": "<command-name>demo</command-name>",
    }
    assert read.texts == ["Done?"] and result.final_message == "Done?"
    assert [partial_text(line) for line in lines[10:13]] == [False, True, False]
    assert read.result is not None and read.result["finishReason"] == "completed"


# --- skill shadows -------------------------------------------------------------------------


def test_a_copy_of_the_skill_in_another_skill_root_of_the_task_is_a_shadow(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path)
    iteration = tmp_path / "workspace" / "demo" / "iteration-1"
    shadows = {}
    for arm, skill in (("with_skill", read_skill(skill_dir / "SKILL.md")), ("without_skill", None)):
        env = iteration / f"env-write-notes-{arm}"
        (env / ".clinerules" / "skills" / "demo").mkdir(parents=True)
        (env / ".clinerules" / "skills" / "demo" / "SKILL.md").write_text("---\nname: demo\n---\n")
        (tmp_path / f"elsewhere-{arm}").mkdir()
        (env / ".agents").symlink_to(tmp_path / f"elsewhere-{arm}")
        dispatch = Dispatch(
            case={"prompt": "Hi."},
            env=env,
            skill=skill,
            skill_dir=skill_dir if skill else None,
            agent=AgentSettings(model=MODEL),
            client=None,  # type: ignore[arg-type]
            result=AgentResult(),
            skill_name="demo",
        )
        staged = stage_skill(dispatch, skills_dir=SKILLS_DIR)
        shadows[arm] = skill_shadow(dispatch, staged=staged)
        write_json(iteration / "eval-write-notes" / arm / "skill-shadow.json", shadows[arm])

    assert shadows["with_skill"]["other_copies"] == [
        ".clinerules/skills/demo (a directory)",
        ".agents/skills/demo (behind a symbolic link)",
    ]
    assert shadows["with_skill"]["staged"].endswith("env-write-notes-with_skill/.cline/skills/demo")
    assert shadows["without_skill"]["other_copies"] == shadows["with_skill"]["other_copies"]
    (warning,) = ClineHarness(cli=require_cli("cline")).finish_iteration(iteration)
    assert "was discoverable in every condition" in warning and ".clinerules" in warning


def test_the_provider_file_is_written_through_no_link_an_agent_planted(tmp_path) -> None:
    from grading.evaluating.cline.cli import config_dir, write_config

    outside = tmp_path / "outside.json"
    outside.write_text("host file")
    home = tmp_path / "home"
    settings = config_dir(home) / "data" / "settings"
    settings.mkdir(parents=True)
    (settings / "providers.json").symlink_to(outside)
    write_config(home, model="m", base_url="http://127.0.0.1:1", key="evalsite-run-x")
    assert outside.read_text() == "host file"
    assert not (settings / "providers.json").is_symlink()
    assert "evalsite-run-x" in (settings / "providers.json").read_text()
