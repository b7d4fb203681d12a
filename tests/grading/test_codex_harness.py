"""`runevals --harness codex`: the real Codex CLI against the fake Responses API.

The CLI talks only to evalsite's proxy (through the sandbox's loopback bridge), which
forwards to the fake with the real key; the fake scripts the CLI's tool calls (exec_command
reading SKILL.md, an apply_patch, a command), and the CLI runs them for real in the run's
task folder. The CLI's tests skip where it is not installed; the wire's and the event
mapping's always run.
"""

from __future__ import annotations

import http.client
import io
import json
import re
import time
from pathlib import Path
from typing import Any

import anthropic
import jsonschema
import pytest
from django.core.management import call_command

from grading import sandbox
from grading.evaluating import registry
from grading.evaluating.apiproxy import ApiProxy
from grading.evaluating.codex import (
    RESPONSES,
    CodexHarness,
    ResponsesMeter,
    skills_read,
    transcribe,
)
from grading.evaluating.codex.shadow import other_copies
from grading.evaluating.harness import AgentResult
from grading.evaluating.plan import make_plan
from grading.evaluating.runner import Runner, Settings
from runs.models import Run
from tests.factories import write_json
from tests.fake_responses import FakeResponses, RecordedRequest, api_error, function_call, reply
from tests.fakeapi import FakeAnthropic, tool_use
from tests.fakeapi import reply as anthropic_reply
from tests.grading.agent_clis import require_cli

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
SCHEMA_FOR = {
    "grading.json": "grading.schema.json",
    "run.json": "run-record.schema.json",
    "conversation.json": "conversation.schema.json",
    "timing.json": "timing.schema.json",
}
MODEL = "gpt-5.5"
REAL_KEY = "sk-test-real-openai-key"
#: The staged skill's entry in Codex's skills listing: in the skill-loading arm only.
LISTED = "- demo: Use when writing notes."
PATCH = "*** Begin Patch\n*** Add File: notes.md\n+It works.\n*** End Patch\n"
KEY_CHECK = "printf 'key=%s\\n' \"$EVALSITE_CODEX_API_KEY\"; env | grep -c sk-test-real || true"

EVALS: list[dict[str, Any]] = [
    {
        "id": "write-notes",
        "prompt": "Write notes.md summarising README.md.",
        "expected_output": "notes.md exists.",
        "files": ["fixtures/README.md"],
        "turns": [
            {
                "prompt": "Yes, run the check.",
                "deliver_when": "agent_asks",
                "agent_response_matches": "(?i)shall I",
            }
        ],
        "assertions": [
            {
                "id": "read-skill",
                "type": "transcript_check",
                "check": "tool_invocation_matches",
                "pattern": "command_execution .*SKILL\\.md",
            },
            {
                "id": "patched-notes",
                "type": "transcript_check",
                "check": "tool_invocation_matches",
                "pattern": "file_change .*notes\\.md",
            },
            {
                "id": "checked",
                "type": "transcript_check",
                "check": "assistant_message_matches",
                "pattern": "^Checked",
            },
            {"id": "notes-exist", "type": "command_check", "command": "grep -q works notes.md"},
            {"id": "small", "type": "diff_scope", "max_files_touched": 1},
        ],
    },
    {
        "id": "chat",
        "prompt": "Help me plan.",
        "expected_output": "A plan on the branch the user names.",
        "responder": {"type": "llm", "max_turns": 3},
    },
]


def make_skill(root: Path) -> Path:
    skill = root / "demo"
    (skill / "evals" / "fixtures").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: demo\ndescription: Use when writing notes.\n---\nRead before writing.\n"
    )
    (skill / "evals" / "fixtures" / "README.md").write_text("# Project\nIt works.\n")
    write_json(skill / "evals" / "evals.json", {"skill_name": "demo", "evals": EVALS})
    return skill


def user(request: Any) -> Any:
    """The `llm` responder, playing the user in the chat (over the fake Messages API)."""
    if "Using staging" in json.dumps(request.messages):
        return anthropic_reply(tool_use("respond", {"action": "done", "rationale": "planned"}))
    answer = {"action": "reply", "message": "Use the staging branch.", "rationale": "asked"}
    return anthropic_reply(tool_use("respond", answer))


def with_skill(request: RecordedRequest) -> bool:
    return LISTED in json.dumps(request.body)


def agent(request: RecordedRequest) -> Any:
    """The with_skill arm reads SKILL.md, patches notes.md, asks, then runs the check; the
    without_skill arm answers without doing anything. In the chat, both ask for a branch."""
    if any("Help me plan." in said for said in request.user_texts()):
        staging = "Use the staging branch." in request.last_user_text
        return reply("Using staging. Done." if staging else "Which branch should I use?")
    if not with_skill(request):
        return reply("No notes today.")
    if "Yes, run the check." in request.last_user_text:
        steps = [reply(function_call("exec_command", {"cmd": KEY_CHECK})), reply("Checked.")]
    else:
        steps = [
            reply(function_call("exec_command", {"cmd": "cat .agents/skills/demo/SKILL.md"})),
            reply(function_call("exec_command", {"cmd": f"apply_patch <<'EOF'\n{PATCH}EOF\n"})),
            reply("notes.md written. Shall I run the check?"),
        ]
    return steps[request.steps]


@pytest.fixture
def workspace(tmp_path: Path, settings) -> Path:
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    settings.EVALSITE_API_MAX_RETRIES = 0
    return settings.EVALSITE_WORKSPACE_DIR


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.django_db
def test_runevals_plays_each_arm_with_the_real_codex_cli(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = require_cli("codex")
    unsafe = ["--unsafe-no-sandbox"] if sandbox.sandbox_problem() else []
    # The operator's own Codex home, which no run may read: its model and its skill.
    own = tmp_path / "own-codex"
    (own / "skills" / "own-skill").mkdir(parents=True)
    (own / "config.toml").write_text('model = "operators-own-model"\n')
    (own / "skills" / "own-skill" / "SKILL.md").write_text(
        "---\nname: own-skill\ndescription: The operator's own.\n---\nMine.\n"
    )
    monkeypatch.setenv("CODEX_HOME", str(own))
    with FakeResponses(agent, api_key=REAL_KEY, delay=0.05) as api, FakeAnthropic(user) as judge:
        monkeypatch.setenv("OPENAI_BASE_URL", api.url)
        monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", judge.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        out = io.StringIO()
        call_command(
            "runevals",
            str(make_skill(tmp_path)),
            "--harness",
            "codex",
            "--model",
            MODEL,
            "--concurrency",
            "2",
            *unsafe,
            stdout=out,
        )
    assert not api.errors, api.errors
    # No assertion needs the judge: the Messages API is only the responder's, twice an arm.
    assert not judge.errors
    assert [r.forced_tool for r in judge.requests] == ["respond"] * 4
    assert "4 runs (0 errored)" in out.getvalue()

    folder = workspace / "demo" / "iteration-1"
    for path in folder.rglob("*.json"):
        if path.name in SCHEMA_FOR:
            schema = load(SCHEMAS / SCHEMA_FOR[path.name])
            jsonschema.validators.validator_for(schema)(schema).validate(load(path))
    conditions = load(folder / "conditions.json")
    assert conditions["harness"] == "codex"
    assert conditions["runevals"]["harness_version"] == "0.171.0"
    assert binary.name == "codex"

    def grading(arm: str) -> dict[str, Any]:
        return load(folder / "eval-write-notes" / arm / "grading.json")

    def verdicts(arm: str) -> dict[str, bool]:
        return {r["id"]: r["passed"] for r in grading(arm)["assertion_results"]}

    assert verdicts("with_skill") == dict.fromkeys(
        ["read-skill", "patched-notes", "checked", "notes-exist", "small"], True
    )
    assert verdicts("without_skill") == {
        "read-skill": False,
        "patched-notes": False,
        "checked": False,
        "notes-exist": False,
        "small": True,
    }
    # Codex has no skill tool: whether the skill was used is not observable, so neither arm
    # gets a __skill_invoked (never guessed from the read of SKILL.md).
    assert "meta_results" not in grading("with_skill")
    assert "meta_results" not in grading("without_skill")

    # The events as eval-magic reads Codex's: item types as tool names; the read of the
    # staged SKILL.md kept as evidence in codex.json, not as a Skill call.
    record = load(folder / "eval-write-notes" / "with_skill" / "run.json")
    calls = record["tool_invocations"]
    assert [c["name"] for c in calls] == [
        "command_execution",
        "file_change",
        "command_execution",
    ]
    assert "Read before writing." in calls[0]["result"]
    codex = load(folder / "eval-write-notes" / "with_skill" / "codex.json")
    reads = [read for r in codex["rounds"] for read in r["skill_file_reads"]]
    assert reads == [{"skill": "demo", "ordinal": calls[0]["ordinal"]}]
    assert calls[1]["args"]["changes"][0]["path"].endswith("/notes.md")
    # The CLI and the agent's commands hold a placeholder, never the key.
    assert re.search(r"key=evalsite-run-\S+\n0\b", calls[2]["result"]), calls[2]["result"]
    assert REAL_KEY not in json.dumps(record)
    assert all(r.headers["authorization"] == f"Bearer {REAL_KEY}" for r in api.requests)
    assert all(r.path == "/v1/responses" and r.body["stream"] is True for r in api.requests)
    # Isolated: only the staged skill is listed (not Codex's bundled ones, nor the
    # operator's), and the model is the one runevals was given.
    assert all(r.model == MODEL for r in api.requests)
    listings = [json.dumps(r.body) for r in api.requests]
    assert not any("own-skill" in text or "- imagegen:" in text for text in listings)

    conversation = load(folder / "eval-write-notes" / "with_skill" / "conversation.json")
    assert conversation["status"] == "completed" and conversation["delivered_followups"] == 1
    without = load(folder / "eval-write-notes" / "without_skill" / "conversation.json")
    assert without["stop_reason"] == "agent_did_not_ask"

    # Every call went through the proxy and was counted: its tokens are the fake's.
    notes = [r for r in api.requests if "Help me plan." not in json.dumps(r.body)]
    for arm, requests in (
        ("with_skill", [r for r in notes if with_skill(r)]),
        ("without_skill", [r for r in notes if not with_skill(r)]),
    ):
        codex = load(folder / "eval-write-notes" / arm / "codex.json")
        assert codex["api"]["calls"] == len(requests) == codex["api"]["requests"]
        spent = sum(r.usage["input_tokens"] + r.usage["output_tokens"] for r in requests)
        assert codex["api"]["tokens"] == spent
        assert load(folder / "eval-write-notes" / arm / "timing.json")["total_tokens"] == spent
        assert codex["sandboxed"] is not bool(unsafe)
        assert codex["cli_version"] == "0.171.0"
    codex = load(folder / "eval-write-notes" / "with_skill" / "codex.json")
    assert len(notes) == 6  # 4 in the first round, 1 in the second (with), 1 without
    # The follow-up resumed the session: same thread, and the fake saw the whole history.
    first, second = codex["rounds"]
    assert second["resumed"] and second["thread_id"] == first["thread_id"] == codex["session_id"]
    followup = next(r for r in api.requests if r.last_user_text == "Yes, run the check.")
    assert "Write notes.md summarising README.md." in followup.user_texts()
    assert codex["skill_staged_at"] == ".agents/skills/demo"
    shadow = load(folder / "eval-write-notes" / "with_skill" / "skill-shadow.json")
    assert shadow["skill_name"] == "demo" and shadow["other_copies"] == []
    assert not list(folder.glob("env-*"))  # task folders and the CLI's homes are removed

    # The llm responder's reply resumed the chat, and its verdict ended it.
    chat = load(folder / "eval-chat" / "with_skill" / "conversation.json")
    assert [(e["type"], e["round"]) for e in chat["events"]] == [
        ("user_message", 1),
        ("assistant_message", 1),
        ("user_message", 2),
        ("assistant_message", 2),
    ]
    assert chat["events"][2]["origin"] == {"responder": "llm", "rationale": "asked"}
    assert chat["responder_outcome"] == {"ending": "done", "rationale": "planned"}
    assert "meta_results" not in load(folder / "eval-chat" / "with_skill" / "grading.json")


def run_plan(
    skill: Path,
    workspace: Path,
    round_seconds: float = 600,
    unsafe: bool = bool(sandbox.sandbox_problem()),
    **settings: Any,
) -> Any:
    plan = make_plan(skill, only=["write-notes"], agent_model=MODEL, judge_model=MODEL)
    harness = CodexHarness(unsafe=unsafe, round_seconds=round_seconds)
    return Runner(
        plan, anthropic.Anthropic(), Settings(workspace=workspace, harness=harness, **settings)
    ).run()


@pytest.fixture
def openai_api(monkeypatch: pytest.MonkeyPatch):
    require_cli("codex")
    with FakeResponses(api_key=REAL_KEY) as fake, FakeAnthropic() as judge:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
        monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", judge.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield fake
    assert not fake.errors, fake.errors


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize("unsafe", [False, True], ids=["sandboxed", "unsandboxed"])
def test_the_proxy_stops_a_run_at_its_call_budget_and_the_run_is_still_graded(
    unsafe: bool, tmp_path: Path, workspace: Path, openai_api: FakeResponses
) -> None:
    if not unsafe and sandbox.sandbox_problem():
        pytest.skip(f"no sandbox here: {sandbox.sandbox_problem()}")
    openai_api.script = lambda request: reply(
        function_call("exec_command", {"cmd": f"echo {request.steps}"})
    )

    result = run_plan(make_skill(tmp_path), workspace, unsafe=unsafe, max_calls=3, concurrency=2)

    assert [o.errored for o in result.outcomes] == [None, None]
    assert [o.calls for o in result.outcomes] == [3, 3]
    assert openai_api.calls == 6  # the 4th call of each run never reached the API
    folder = result.folder / "eval-write-notes" / "with_skill"
    conversation = load(folder / "conversation.json")
    assert (conversation["status"], conversation["stop_reason"]) == (
        "stopped",
        "max_turns_reached",
    )
    assert load(folder / "codex.json")["api"]["refusal"] == (
        "the run's budget of 3 API calls is used up"
    )
    assert load(folder / "grading.json")["assertion_results"]
    assert load(folder / "codex.json")["sandboxed"] is not unsafe


@pytest.mark.slow
@pytest.mark.django_db
def test_an_api_error_the_cli_cannot_get_past_errors_the_run(
    tmp_path: Path, workspace: Path, openai_api: FakeResponses
) -> None:
    refused = api_error(400, "invalid_request_error", "input: the fake refuses this")
    openai_api.script = lambda request: refused

    result = run_plan(make_skill(tmp_path), workspace, concurrency=2)

    assert result.errored == 2
    error = load(result.folder / "eval-write-notes" / "with_skill" / "error.json")
    assert error["type"] == "CodexError"
    assert "the fake refuses this" in error["error"] and "\n" not in error["error"]
    assert Run.objects.filter(status="errored").count() == 2


@pytest.mark.slow
@pytest.mark.django_db
def test_a_call_the_api_failed_is_retried_by_the_cli_and_costs_nothing(
    tmp_path: Path, workspace: Path, openai_api: FakeResponses
) -> None:
    failed = api_error(500, "server_error", "try again", retry=True)
    openai_api.script = lambda request: failed if request.call == 1 else reply("No notes today.")

    result = run_plan(make_skill(tmp_path), workspace, concurrency=1)

    assert result.errored == 0 and openai_api.calls == 3
    assert sorted(o.calls for o in result.outcomes) == [1, 1]  # the answered calls only
    statuses = sorted(str(r.status) for r in openai_api.requests)
    assert statuses == ["200", "200", "500"]


@pytest.mark.slow
@pytest.mark.django_db
def test_a_round_that_outruns_its_time_is_killed_and_errors_the_run(
    tmp_path: Path, workspace: Path, openai_api: FakeResponses
) -> None:
    openai_api.delay = 30  # a model that never answers in time
    openai_api.script = lambda request: reply("Too late.")
    started = time.monotonic()

    result = run_plan(make_skill(tmp_path), workspace, round_seconds=4, concurrency=2)

    assert time.monotonic() - started < 25
    assert result.errored == 2
    error = load(result.folder / "eval-write-notes" / "without_skill" / "error.json")
    assert error["type"] == "CodexError" and "round 1: the CLI was stopped" in error["error"]
    assert not list(result.folder.glob("env-*"))


# --- the harness without the CLI ------------------------------------------------------------


def test_it_says_why_it_cannot_run(settings, tmp_path: Path, monkeypatch) -> None:
    settings.EVALSITE_HARNESS_DIR = tmp_path / "none"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert registry.problem("codex") == (
        f"--harness codex needs @openai/codex@0.171.0, not installed in {tmp_path / 'none'}: "
        "run python manage.py installharnesses codex"
    )


def test_it_needs_an_openai_key_once_installed(monkeypatch) -> None:
    require_cli("codex")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert registry.problem("codex") == (
        "OPENAI_API_KEY is not set: --harness codex needs it to call the OpenAI API"
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert registry.problem("codex") is None


def _post(port: int, path: str, key: str, body: dict[str, Any], method: str = "POST") -> Any:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    data = json.dumps(body).encode()
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
    connection.request(method, path, body=data if method == "POST" else None, headers=headers)
    response = connection.getresponse()
    return response.status, response.read()


def test_the_proxy_forwards_responses_with_the_real_key_and_counts_their_usage() -> None:
    script = [reply("one", usage={"input_tokens": 100, "cached_tokens": 60, "output_tokens": 7})]
    with (
        FakeResponses(script, api_key=REAL_KEY) as api,
        ApiProxy(api_key=REAL_KEY, upstream=api.url, wire=RESPONSES) as proxy,
    ):
        lease = proxy.lease(max_calls=1, token_budget=10_000)
        port = int(proxy.url.rsplit(":", 1)[1])
        body = {"model": "m", "input": "hi", "stream": True}
        status, streamed = _post(port, "/v1/responses?x=1", lease.key, body)
        assert status == 200 and b"response.completed" in streamed
        refused = [
            _post(port, "/v1/models", lease.key, {}, method="GET"),
            _post(port, "/v1/chat/completions", lease.key, body),
            _post(port, "/v1/responses", "evalsite-run-stranger", body),
            _post(port, "/v1/responses", lease.key, body),  # over the budget of 1 call
        ]
    assert api.requests[0].headers["authorization"] == f"Bearer {REAL_KEY}"
    assert api.requests[0].path == "/v1/responses" and len(api.requests) == 1
    assert [status for status, _ in refused] == [404, 404, 401, 400]
    for _, answer in refused:
        error = json.loads(answer)["error"]
        assert error["message"].startswith("evalsite proxy: ") and "type" in error
    assert json.loads(refused[2][1])["error"]["code"] == "invalid_api_key"
    tally = lease.tally
    assert (tally.calls, tally.input, tally.cache_read, tally.output) == (1, 40, 60, 7)


def test_the_meter_reads_a_json_answer_and_ignores_garbage() -> None:
    meter = ResponsesMeter("application/json")
    meter.feed(b'{"usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4},')
    meter.feed(b' "output_tokens": 3}}')
    assert meter.usage() == {
        "input_tokens": 6,
        "cache_read_input_tokens": 4,
        "cache_creation_input_tokens": 0,
        "output_tokens": 3,
    }
    streamed = ResponsesMeter("text/event-stream")
    streamed.feed(b'data: not json\n\ndata: [1]\n\ndata: {"type": "response.completed"}\n\n')
    assert streamed.usage() == {}


def _events(*lines: dict[str, Any]) -> tuple[AgentResult, Any]:
    result = AgentResult()

    def event(kind: str, round_: int, **fields: Any) -> dict[str, Any]:
        recorded = {"type": kind, "ordinal": len(result.events), "round": round_, **fields}
        result.events.append(recorded)
        return recorded

    staged = {"demo": ".agents/skills/demo/SKILL.md"}
    read = transcribe(list(lines), round_=1, result=result, event=event, staged=staged, env="/e")
    return result, read


def test_events_map_to_the_conversation_and_a_failed_turn_is_said() -> None:
    big = "x" * 5000
    result, read = _events(
        {"type": "thread.started", "thread_id": "t-1"},
        {"type": "item.completed", "item": {"type": "error", "message": "no model metadata"}},
        {"type": "item.completed", "item": {"type": "reasoning", "text": "hmm"}},
        {"type": "item.completed", "item": "not an object"},
        {
            "type": "item.completed",
            "item": {
                "id": "i",
                "type": "command_execution",
                "command": "/bin/bash -lc 'sed -n 1,5p /e/.agents/skills/demo/SKILL.md'",
                "aggregated_output": big,
                "exit_code": 0,
                "status": "completed",
            },
        },
        {"type": "item.completed", "item": {"type": "agent_message", "text": "Done?"}},
        {"type": "error", "message": "Reconnecting... 1/5"},
        {"type": "turn.failed", "error": {"message": "stream\n disconnected"}},
    )
    assert read.thread_id == "t-1" and read.failure == "stream disconnected"
    assert read.errors == ["Reconnecting... 1/5"] and not read.completed
    assert read.notices == ["no model metadata"] and read.texts == ["Done?"]
    kinds = [(e["type"], e.get("name")) for e in result.events]
    assert kinds == [
        ("tool_invocation", "command_execution"),
        ("assistant_message", None),
    ]
    assert read.skill_file_reads == [{"skill": "demo", "ordinal": 0}]
    command = result.tool_invocations[0]
    assert command["args"] == {"command": command["args"]["command"], "exit_code": 0}
    assert len(command["result"]) < 2200 and "more characters not shown" in command["result"]
    assert result.final_message == "Done?"


@pytest.mark.parametrize(
    ("command", "read"),
    [
        ("/bin/bash -lc 'cat .agents/skills/demo/SKILL.md'", True),
        ('/bin/bash -lc "head -n 50 ./.agents/skills/demo/SKILL.md|tail -5"', True),
        ("/bin/bash -lc 'ls && nl /e/.agents/skills/demo/../demo/SKILL.md'", True),
        ("/bin/bash -lc 'echo .agents/skills/demo/SKILL.md'", False),  # not a read
        ("/bin/bash -lc 'cat /elsewhere/.agents/skills/demo/SKILL.md'", False),
        ("/bin/bash -lc 'cd .agents/skills/demo && cat SKILL.md'", False),  # not observable
        ("/bin/bash -lc 'cat .agents/skills/other/SKILL.md'", False),
        ('/bin/bash -lc "cat \'unterminated"', False),
        pytest.param("cat .agents/skills/demo/SKILL.md " + "x " * 40_000, False, id="too-long"),
    ],
)
def test_a_skill_counts_as_read_only_when_a_command_shows_its_file(command, read) -> None:
    staged = {"demo": ".agents/skills/demo/SKILL.md"}
    assert skills_read(command, staged=staged, env="/e") == (["demo"] if read else [])


def test_a_failed_read_is_not_a_load() -> None:
    command = "/bin/bash -lc 'cat .agents/skills/demo/SKILL.md'"
    item = {"type": "command_execution", "command": command, "exit_code": 1}
    result, _ = _events({"type": "item.completed", "item": item})
    assert [c["name"] for c in result.tool_invocations] == ["command_execution"]


def test_a_copy_of_the_skill_among_the_fixtures_is_found_without_following_links(
    tmp_path: Path,
) -> None:
    skills = tmp_path / ".agents" / "skills"
    (skills / "demo").mkdir(parents=True)
    (skills / "demo" / "SKILL.md").write_text("---\nname: demo\ndescription: d\n---\n")
    (skills / "renamed").mkdir()
    (skills / "renamed" / "SKILL.md").write_text("---\nname: demo\ndescription: d\n---\n")
    (skills / "unrelated").mkdir()
    (skills / "unrelated" / "SKILL.md").write_text("---\nname: other\ndescription: d\n---\n")
    (skills / "linked").symlink_to(tmp_path / "elsewhere")

    assert other_copies(tmp_path, ".agents/skills", name="demo", staged=None) == [
        ".agents/skills/demo",
        ".agents/skills/renamed (named 'demo' in its SKILL.md)",
    ]
    staged = skills / "demo"
    assert other_copies(tmp_path, ".agents/skills", name="demo", staged=staged) == [
        ".agents/skills/renamed (named 'demo' in its SKILL.md)"
    ]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".agents").symlink_to(tmp_path / ".agents")
    assert other_copies(outside, ".agents/skills", name="demo", staged=None) == [
        ".agents/skills (not a plain folder: not read)"
    ]
    assert other_copies(tmp_path / "nothing", ".agents/skills", name="demo", staged=None) == []


def test_a_copy_in_one_arm_only_makes_the_iteration_invalid(tmp_path: Path) -> None:
    require_cli("codex")
    for arm, copies in (("with_skill", []), ("without_skill", [".agents/skills/demo"])):
        write_json(
            tmp_path / "eval-write-notes" / arm / "skill-shadow.json",
            {"skill_name": "demo", "staged": None, "other_copies": copies, "rounds": []},
        )
    (warning,) = CodexHarness(unsafe=True).finish_iteration(tmp_path)
    assert "without_skill only" in warning and "the comparison is invalid" in warning
