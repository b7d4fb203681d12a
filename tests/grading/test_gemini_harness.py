"""`runevals --harness gemini`: the real Gemini CLI against the fake Gemini API.

The CLI (@google/gemini-cli, installed by `manage.py installharnesses gemini`) talks only to
evalsite's proxy, through the loopback bridge inside the sandbox; the proxy forwards to the
fake with the real key. The fake scripts the CLI's function calls (activate_skill,
read_file, write_file, run_shell_command), and the CLI runs them for real in the run's task
folder. Tests that need the CLI skip without it; the wire's and the proxy's always run.
"""

from __future__ import annotations

import io
import json
import re
import time
import urllib.error
import urllib.request
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import pytest
from django.core.management import call_command

from grading import sandbox
from grading.evaluating import agent_clis, registry
from grading.evaluating.apiproxy import ApiProxy
from grading.evaluating.gemini import GEMINI, GeminiError, GeminiHarness, session_mend
from grading.evaluating.gemini.shadow import skill_shadow as gemini_shadow
from grading.evaluating.gemini.stream import transcribe
from grading.evaluating.gemini.wire import forwarded_target, usage_of
from grading.evaluating.harness import AgentResult, AgentSettings, Dispatch
from grading.evaluating.skillcalls import LOADED, turn_skills
from grading.evaluating.taskdir import build_template
from runs.models import Iteration, Run
from tests.factories import write_json
from tests.fake_gemini import (
    FakeGemini,
    GeminiRequest,
    api_error,
    fake_gemini_fixture,  # noqa: F401 - the fake_gemini fixture
    function_call,
    reply,
)
from tests.fakeapi import FakeAnthropic, RecordedRequest, tool_use
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
MODEL = "gemini-2.5-flash"
REAL_KEY = "real-gemini-key"

EVALS: list[dict[str, Any]] = [
    {
        "id": "write-notes",
        "prompt": "Write notes.md summarising README.md.",
        "expected_output": "notes.md exists and summarises the README.",
        "files": ["fixtures/README.md"],
        "assertions": [
            {
                "id": "read-first",
                "type": "transcript_check",
                "check": "tool_invocation_matches",
                "pattern": "read_file .*README",
            },
            {
                "id": "ran-check",
                "type": "transcript_check",
                "check": "tool_invocation_matches",
                "pattern": "run_shell_command .*printf",
            },
            {"id": "notes-exist", "type": "command_check", "command": "grep -q works notes.md"},
            {"id": "small", "type": "diff_scope", "max_files_touched": 1},
        ],
    },
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


def agent(request: GeminiRequest) -> Any:
    """Each eval's agent: the arm that lists the skill activates it, reads the README, writes
    notes.md and runs a command; the other only writes notes.md."""
    prompt, turn = request.user_texts, request.model_turns
    said = " ".join(prompt)
    if "Write notes.md" in said:
        if "<name>demo</name>" in request.system_text:
            steps = [
                function_call("activate_skill", {"name": "demo"}),
                function_call("read_file", {"file_path": "fixtures/README.md"}),
                function_call("write_file", {"file_path": "notes.md", "content": "It works.\n"}),
                function_call(
                    "run_shell_command", {"command": "printf 'key=%s\\n' \"$GEMINI_API_KEY\""}
                ),
            ]
        else:
            steps = [function_call("write_file", {"file_path": "notes.md", "content": "It works."})]
        return reply(steps[turn]) if turn < len(steps) else reply("Done: notes.md written.")
    if "Plan the change." in said:
        return reply("Going ahead. All done." if "Yes, go ahead." in said else "Shall I?")
    if "Help me plan." in said:
        staging = "Use the staging branch." in said
        return reply("Using staging. Done." if staging else "Which branch should I use?")
    raise LookupError(f"no script for {said[:80]!r}")


@pytest.fixture
def workspace(tmp_path: Path, settings) -> Path:
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    settings.EVALSITE_API_MAX_RETRIES = 0
    return settings.EVALSITE_WORKSPACE_DIR


def user(request: RecordedRequest) -> Any:
    """The `llm` responder (over the Anthropic API, whichever harness played the agent)."""
    if "Using staging" in json.dumps(request.messages):
        return anthropic_reply(tool_use("respond", {"action": "done", "rationale": "planned"}))
    answer = {"action": "reply", "message": "Use the staging branch.", "rationale": "asked"}
    return anthropic_reply(tool_use("respond", answer))


@pytest.fixture
def gemini_api(monkeypatch: pytest.MonkeyPatch):
    with FakeGemini(agent) as fake, FakeAnthropic(user) as judge:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("GEMINI_API_KEY", REAL_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", judge.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "judge-key")
        yield fake
    assert not fake.errors, fake.errors


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.django_db
def test_runevals_plays_each_eval_with_gemini_cli_and_grades_it(
    tmp_path: Path, workspace: Path, gemini_api: FakeGemini
) -> None:
    binary = require_cli("gemini")
    unsafe = ["--unsafe-no-sandbox"] if sandbox.sandbox_problem() else []
    out = io.StringIO()
    call_command(
        "runevals",
        str(make_skill(tmp_path)),
        "--harness",
        "gemini",
        "--model",
        MODEL,
        "--concurrency",
        "4",
        *unsafe,
        stdout=out,
    )

    folder = workspace / "demo" / "iteration-1"
    assert "6 runs (0 errored)" in out.getvalue()
    for path in folder.rglob("*.json"):
        if path.name in SCHEMA_FOR:
            schema = load(SCHEMAS / SCHEMA_FOR[path.name])
            jsonschema.validators.validator_for(schema)(schema).validate(load(path))
    conditions = load(folder / "conditions.json")
    assert conditions["harness"] == "gemini"
    assert conditions["runevals"]["harness_version"] == agent_clis.cli_version(binary)
    assert re.fullmatch(r"\d+\.\d+\.\d+", conditions["runevals"]["harness_version"])
    iteration = Iteration.objects.get(skill__name="demo")
    assert iteration.harness == "gemini"
    assert Run.objects.filter(iteration=iteration, status="completed").count() == 6

    def grading(cell: str) -> dict[str, Any]:
        return load(folder / f"eval-{cell}" / "grading.json")

    def verdicts(cell: str) -> dict[str, bool]:
        return {r["id"]: r["passed"] for r in grading(cell)["assertion_results"]}

    assert verdicts("write-notes/with_skill") == dict.fromkeys(
        ["read-first", "ran-check", "notes-exist", "small"], True
    )
    assert verdicts("write-notes/without_skill") == {
        "read-first": False,
        "ran-check": False,
        "notes-exist": True,
        "small": True,  # the staged skill is not counted: one file, notes.md
    }
    assert grading("write-notes/with_skill")["meta_summary"]["skill_invoked"] is True
    assert "meta_results" not in grading("write-notes/without_skill")
    assert verdicts("asks/with_skill") == verdicts("asks/without_skill") == {"went-ahead": True}

    record = load(folder / "eval-write-notes" / "with_skill" / "run.json")
    assert [(t["name"], t["ordinal"]) for t in record["tool_invocations"]] == [
        ("Skill", 1),
        ("read_file", 2),
        ("write_file", 3),
        ("run_shell_command", 4),
    ]
    assert record["tool_invocations"][0]["args"] == {"skill": "demo"}
    assert "Skill **demo** activated" in record["tool_invocations"][0]["result"]
    assert record["final_message"] == "Done: notes.md written."
    # The agent's processes hold a placeholder; only the proxy's requests carry the key.
    shell = record["tool_invocations"][3]["result"]
    assert shell.startswith("key=evalsite-run-") and REAL_KEY not in shell
    assert all(r.headers.get("x-goog-api-key") == REAL_KEY for r in gemini_api.requests)
    assert all(r.model == MODEL for r in gemini_api.generate_requests)

    # The proxy counted every call the CLI made, and the run's tokens are its tally.
    provenance = [load(p) for p in folder.rglob("gemini.json")]
    assert len(provenance) == 6
    assert sum(p["api"]["calls"] for p in provenance) == gemini_api.calls
    assert all(p["sandboxed"] is not bool(unsafe) for p in provenance)
    notes = next(p for p in provenance if p["staged_skill"])
    assert notes["api"]["calls"] >= 5 and notes["api"]["refused"] == 0
    timing = load(folder / "eval-write-notes" / "with_skill" / "timing.json")
    assert timing["total_tokens"] > 0 and timing["duration_ms"] > 0
    assert not list(folder.glob("env-*"))  # task folders and the CLI's homes are removed
    shadows = [load(p) for p in folder.rglob("skill-shadow.json")]
    assert len(shadows) == 6 and not any(s["other_copies"] for s in shadows)

    # The follow-up resumed the CLI's session: its request carries the first round.
    asked = load(folder / "eval-asks" / "with_skill" / "conversation.json")
    assert asked["status"] == "completed" and asked["delivered_followups"] == 1
    assert [(e["type"], e["round"]) for e in asked["events"]] == [
        ("user_message", 1),
        ("assistant_message", 1),
        ("user_message", 2),
        ("assistant_message", 2),
    ]
    follow_ups = [r for r in gemini_api.generate_requests if "Yes, go ahead." in r.user_texts]
    assert len(follow_ups) == 2
    assert all("Shall I?" in json.dumps(r.contents) for r in follow_ups)

    chat = load(folder / "eval-chat" / "without_skill" / "conversation.json")
    assert chat["status"] == "completed" and chat["delivered_followups"] == 1
    assert chat["events"][2]["origin"] == {"responder": "llm", "rationale": "asked"}
    assert chat["responder_outcome"] == {"ending": "done", "rationale": "planned"}


def dispatch_for(env: Path, prompt: str, *, turns: list[dict[str, Any]] | None = None) -> Dispatch:
    return Dispatch(
        case={"prompt": prompt, "turns": turns or []},
        env=env,
        skill=None,
        skill_dir=None,
        agent=AgentSettings(model=MODEL),
        client=None,  # type: ignore[arg-type]  # no responder: nobody calls Anthropic
        result=AgentResult(),
        skill_name="demo",
    )


def task_folder(tmp_path: Path, name: str) -> Path:
    env = tmp_path / "workspace" / "demo" / "iteration-1" / name
    build_template(env, [], evals_dir=env)
    return env


@pytest.mark.slow
@pytest.mark.parametrize("unsafe", [False, True], ids=["sandboxed", "unsandboxed"])
def test_a_dispatch_reads_none_of_the_users_gemini_config_and_writes_only_its_task_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unsafe: bool
) -> None:
    require_cli("gemini")
    if not unsafe and sandbox.sandbox_problem():
        pytest.skip(sandbox.sandbox_problem())
    decoy = "---\nname: demo\ndescription: DECOY copy.\n---\nDecoy.\n"
    home = tmp_path / "home"
    for skills in (home / ".gemini" / "skills", home / ".agents" / "skills"):
        (skills / "demo").mkdir(parents=True)
        (skills / "demo" / "SKILL.md").write_text(decoy)
    (home / ".gemini" / "GEMINI.md").write_text("DECOY memory: always answer 5.\n")
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "GEMINI.md").write_text("DECOY memory above the task.\n")
    (home / ".gemini" / "settings.json").write_text('{"mcpServers": {"decoy": {"command": "x"}}}')
    monkeypatch.setenv("HOME", str(home))
    # The task's own workspace settings may name an MCP server: none is started.
    env = tmp_path / "workspace" / "demo" / "iteration-1" / "env-clean"
    server = {"command": "sh", "args": ["-c", f"touch {env}/mcp-started"]}
    fixture = write_json(tmp_path / "settings.json", {"mcpServers": {"decoy": server}})
    build_template(env, [(fixture, PurePosixPath(".gemini/settings.json"))], evals_dir=tmp_path)
    outside = tmp_path / "outside.txt"

    def answer(request: GeminiRequest) -> Any:
        if request.model_turns == 0:
            return reply(function_call("write_file", {"file_path": str(outside), "content": "x"}))
        return reply("It is 4.")

    with FakeGemini(answer) as fake:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("GEMINI_API_KEY", REAL_KEY)
        result = GeminiHarness(unsafe=unsafe).run(dispatch_for(env, "What is 2+2?"))

    assert not fake.errors, fake.errors
    assert result.final_message == "It is 4." and result.usage.calls == 2 == fake.calls
    assert not outside.exists() and not (env / "mcp-started").exists()
    (refused,) = result.tool_invocations
    assert refused["name"] == "write_file" and "outside the allowed workspace" in refused["result"]
    assert fake.requests and not any("DECOY" in json.dumps(r.body) for r in fake.requests)
    assert not any("decoy" in r.tool_names for r in fake.requests)
    record = result.artifacts["gemini.json"]
    assert record["sandboxed"] is not unsafe and record["cli_version"] == "0.61.0"
    assert record["api"]["calls"] == 2 and record["api"]["refusal"] is None
    assert [r["status"] for r in record["rounds"]] == ["success"]
    assert result.artifacts["skill-shadow.json"]["other_copies"] == []
    assert not env.with_name("env-clean.home").exists()


@pytest.mark.slow
def test_an_api_error_the_cli_cannot_get_past_errors_the_run_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_cli("gemini")
    env = task_folder(tmp_path, "env-refused")
    with FakeGemini([api_error(400, "the fake refuses this")]) as fake:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("GEMINI_API_KEY", REAL_KEY)
        harness = GeminiHarness(unsafe=bool(sandbox.sandbox_problem()))
        with pytest.raises(GeminiError, match="round 1: .*the fake refuses this") as raised:
            harness.run(dispatch_for(env, "What is 2+2?"))

    assert "\n" not in str(raised.value) and fake.calls == 1  # a 400 is not retried


@pytest.mark.slow
def test_a_follow_up_after_a_round_with_tool_calls_resumes_with_each_response_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemini CLI 0.61 records each function response twice and resumes with both, which
    the Gemini API (and the fake) refuses; the harness mends the session first."""
    require_cli("gemini")
    env = task_folder(tmp_path, "env-resumed")
    (env / "seen.txt").write_text("seen\n")
    read = function_call("read_file", {"file_path": "seen.txt"})
    listed = function_call("list_directory", {"dir_path": "."})
    script = [
        reply(read, listed),  # two calls in one turn, then one
        reply(function_call("read_file", {"file_path": "seen.txt"})),
        reply("Shall I?"),
        reply(function_call("list_directory", {"dir_path": "."})),
        reply("Done."),
        reply("Again done."),
    ]
    with FakeGemini(script) as fake:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("GEMINI_API_KEY", REAL_KEY)
        harness = GeminiHarness(unsafe=bool(sandbox.sandbox_problem()))
        turns = [{"prompt": "Yes.", "deliver_when": "always"}] * 2
        result = harness.run(dispatch_for(env, "Look around.", turns=turns))

    assert not fake.errors, fake.errors  # every resumed history answered each call once
    assert result.status == "completed" and result.delivered_followups == 2
    assert result.final_message == "Again done." and fake.calls == 6
    last = fake.generate_requests[-1]
    responses = [
        p["functionResponse"]["name"]
        for c in last.contents
        for p in c["parts"]
        if "functionResponse" in p
    ]
    assert responses == ["read_file", "list_directory", "read_file", "list_directory"]
    record = result.artifacts["gemini.json"]
    assert [r["status"] for r in record["rounds"]] == ["success"] * 3


@pytest.mark.slow
def test_the_proxy_stops_a_run_at_its_call_budget_and_the_conversation_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_cli("gemini")
    env = task_folder(tmp_path, "env-endless")

    def endless(request: GeminiRequest) -> Any:
        return reply(function_call("run_shell_command", {"command": f"echo {request.call}"}))

    dispatch = dispatch_for(env, "Keep going.")
    dispatch.agent.max_calls = 3
    with FakeGemini(endless) as fake:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("GEMINI_API_KEY", REAL_KEY)
        result = GeminiHarness(unsafe=bool(sandbox.sandbox_problem())).run(dispatch)

    assert (result.status, result.stop_reason) == ("stopped", "max_turns_reached")
    assert fake.calls == 3 and result.usage.calls == 3  # the refused call never reached it
    assert [t["name"] for t in result.tool_invocations] == ["run_shell_command"] * 3
    record = result.artifacts["gemini.json"]
    assert record["api"]["refusal"] == "the run's budget of 3 API calls is used up"


@pytest.mark.slow
def test_a_round_that_outruns_its_time_is_killed_and_errors_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_cli("gemini")
    env = task_folder(tmp_path, "env-slow")
    harness = GeminiHarness(unsafe=bool(sandbox.sandbox_problem()), round_seconds=4)
    with FakeGemini([reply("late")], delay=30) as fake:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("GEMINI_API_KEY", REAL_KEY)
        started = time.monotonic()
        with pytest.raises(GeminiError, match="round 1: the CLI was stopped: it ran longer"):
            harness.run(dispatch_for(env, "What is 2+2?"))
        elapsed = time.monotonic() - started

    assert 4 <= elapsed < 12
    assert not env.with_name("env-slow.home").exists()


# --- the wire, the proxy, the stream ------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "forwarded"),
    [
        ("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", "?alt=sse"),
        ("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=k", "?alt=sse"),
        ("/v1beta/models/gemini-3.1-pro-preview:generateContent?key=k", ""),
        ("/v1beta/models/gemini-2.5-flash:countTokens", ""),
        ("/v1beta/models/gemini-2.5-pro:streamGenerateContent", None),
        ("/v1beta/models/..:generateContent", None),
        ("/v1beta/models/.hidden:generateContent", None),
        ("/v1beta/models/a%2F..%2Fb:generateContent", None),
        ("/v1beta/models/a/b:generateContent", None),
        ("/v1beta/models/gemini:embedContent", None),
        ("/v1beta/files", None),
        ("/v1/models/gemini-2.5-pro:generateContent", None),
        ("//v1beta/models/gemini-2.5-pro:generateContent", None),
        ("/v1beta/models/gemini-2.5-pro:generateContent/", None),
    ],
)
def test_the_wire_forwards_only_the_clis_calls_spelled_one_way(
    target: str, forwarded: str | None
) -> None:
    expected = None if forwarded is None else target.partition("?")[0] + forwarded
    assert forwarded_target("POST", target) == expected
    assert forwarded_target("GET", target) is None


def test_usage_is_read_in_the_messages_apis_names_from_the_last_chunk_or_the_body() -> None:
    metadata = {
        "promptTokenCount": 1000,
        "cachedContentTokenCount": 600,
        "candidatesTokenCount": 40,
        "thoughtsTokenCount": 10,
        "totalTokenCount": 1050,
    }
    assert usage_of(metadata) == {
        "input_tokens": 400,
        "cache_read_input_tokens": 600,
        "output_tokens": 50,
    }
    assert usage_of({"promptTokenCount": "x", "candidatesTokenCount": -3}) == {
        "input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 0,
    }
    stream = GEMINI.meter("text/event-stream")
    early = {**metadata, "candidatesTokenCount": 1}
    for data in (early, metadata):
        stream.feed(f"data: {json.dumps({'usageMetadata': data})}\r\n\r\n".encode())
    assert stream.usage()["output_tokens"] == 50
    whole = GEMINI.meter("application/json")
    whole.feed(json.dumps({"candidates": [], "usageMetadata": metadata}).encode())
    assert whole.usage()["input_tokens"] == 400


def post(url: str, body: Any, key: str | None) -> tuple[int, Any, str]:
    headers = {"content-type": "application/json", **({"x-goog-api-key": key} if key else {})}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            text = answer.read().decode()
            return answer.status, answer.headers.get("content-type"), text
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("content-type"), error.read().decode()


HELLO = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}


def test_the_proxy_swaps_the_key_relays_the_stream_and_counts_each_call(
    fake_gemini: FakeGemini,
) -> None:
    usage = {"promptTokenCount": 30, "cachedContentTokenCount": 10, "candidatesTokenCount": 7}
    fake_gemini.script = [reply("Streamed.", usage=usage), reply("Whole.", usage=usage)]
    with ApiProxy(api_key=REAL_KEY, upstream=fake_gemini.url, wire=GEMINI) as proxy:
        lease = proxy.lease(max_calls=5, token_budget=10_000)
        models = f"{proxy.url}/v1beta/models/{MODEL}"
        streamed = post(f"{models}:streamGenerateContent?alt=sse&key=stray", HELLO, lease.key)
        whole = post(f"{models}:generateContent", HELLO, lease.key)
        counted = post(f"{models}:countTokens", HELLO, lease.key)

    assert streamed[0] == 200 and streamed[1] == "text/event-stream"
    chunks = [json.loads(line[5:]) for line in streamed[2].splitlines() if line.startswith("data:")]
    said = "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks)
    assert said == "Streamed." and chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert json.loads(whole[2])["candidates"][0]["content"]["parts"] == [{"text": "Whole."}]
    assert counted[0] == 200 and json.loads(counted[2])["totalTokens"] > 0
    assert [r.headers.get("x-goog-api-key") for r in fake_gemini.requests] == [REAL_KEY] * 3
    assert [r.query for r in fake_gemini.requests] == [{"alt": "sse"}, {}, {}]
    assert (lease.tally.calls, lease.tally.token_counts) == (2, 1)
    assert (lease.tally.input, lease.tally.cache_read, lease.tally.output) == (40, 20, 14)


def test_the_proxy_refuses_strangers_other_calls_and_spent_budgets_in_googles_shape(
    fake_gemini: FakeGemini,
) -> None:
    fake_gemini.script = [reply("one")]
    with ApiProxy(api_key=REAL_KEY, upstream=fake_gemini.url, wire=GEMINI) as proxy:
        lease = proxy.lease(max_calls=1, token_budget=10_000)
        models = f"{proxy.url}/v1beta/models/{MODEL}"
        first = post(f"{models}:generateContent", HELLO, lease.key)
        spent = post(f"{models}:generateContent", HELLO, lease.key)
        stranger = post(f"{models}:generateContent", HELLO, "evalsite-run-guess")
        as_query = post(f"{models}:generateContent?key={lease.key}", HELLO, None)
        elsewhere = post(f"{proxy.url}/v1beta/models/{MODEL}:embedContent", HELLO, lease.key)

    assert first[0] == 200 and fake_gemini.calls == 1  # nothing else reached the API
    for (status, kind, body), code, name in (
        (spent, 400, "INVALID_ARGUMENT"),
        (stranger, 401, "UNAUTHENTICATED"),
        (as_query, 401, "UNAUTHENTICATED"),
        (elsewhere, 404, "NOT_FOUND"),
    ):
        assert (status, kind) == (code, "application/json")
        error = json.loads(body)["error"]
        assert (error["code"], error["status"]) == (code, name)
        assert error["message"].startswith("evalsite proxy: ")
    assert "budget of 1 API calls" in json.loads(spent[2])["error"]["message"]
    assert (lease.tally.calls, lease.tally.refused) == (1, 1)


def test_a_rounds_stream_json_becomes_the_conversations_events() -> None:
    events: list[Any] = [
        {"type": "init", "session_id": "5edeb29b-e5c5-4505-9653-4bf41eb69c6d", "model": MODEL},
        {"type": "message", "role": "user", "content": "Go"},
        {"type": "message", "role": "assistant", "content": "Let me ", "delta": True},
        {"type": "message", "role": "assistant", "content": "look.", "delta": True},
        {
            "type": "tool_use",
            "tool_name": "activate_skill",
            "tool_id": "a",
            "parameters": {"name": "demo"},
        },
        {
            "type": "tool_use",
            "tool_name": "read_file",
            "tool_id": "b",
            "parameters": {"file_path": "x"},
        },
        {"type": "tool_result", "tool_id": "a", "status": "success", "output": "Skill on"},
        {"type": "tool_result", "tool_id": "b", "status": "error", "error": {"message": "no x"}},
        {"type": "error", "severity": "warning", "message": "slow down"},
        "not an event",
        {"type": "message", "role": "assistant", "content": "Done.", "delta": True},
        {"type": "result", "status": "success", "stats": {"total_tokens": 9, "tool_calls": 2}},
    ]
    result = AgentResult()
    recorded: list[dict[str, Any]] = []

    def event(kind: str, round_: int, **fields: Any) -> dict[str, Any]:
        recorded.append({"type": kind, "ordinal": len(recorded), **fields})
        return recorded[-1]

    read = transcribe(
        [e for e in events if isinstance(e, dict)], round_=1, result=result, event=event
    )

    assert read.texts == ["Let me look.", "Done."] and result.final_message == "Done."
    assert read.session_id == events[0]["session_id"] and read.warnings == ["slow down"]
    assert [(e["type"], e.get("name")) for e in recorded] == [
        ("assistant_message", None),
        ("tool_invocation", "Skill"),
        ("tool_invocation", "read_file"),
        ("assistant_message", None),
    ]
    assert result.tool_invocations[0] == {
        "name": "Skill",
        "args": {"skill": "demo"},
        "ordinal": 1,
        "result": "Skill on",
    }
    assert result.tool_invocations[1]["result"] == "Error: no x"
    assert turn_skills(result.tool_invocations, subject="demo", staged=["demo"]).outcome == LOADED


def test_runevals_says_why_gemini_cannot_run_here(
    settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.EVALSITE_HARNESS_DIR = tmp_path / "nothing"
    settings.GEMINI_API_KEY = REAL_KEY
    assert registry.problem("gemini") == agent_clis.missing("gemini")
    assert "installharnesses gemini" in registry.problem("gemini")

    monkeypatch.setattr("grading.evaluating.gemini.session.cli_path", lambda: Path("/bin/true"))
    assert registry.problem("gemini") is None
    settings.GEMINI_API_KEY = ""
    assert registry.problem("gemini") == (
        "--harness gemini needs GEMINI_API_KEY (the Gemini API key) to be set"
    )


def test_mending_a_session_drops_only_responses_a_model_message_already_carries() -> None:
    def response(call_id: str) -> dict[str, Any]:
        return {"functionResponse": {"id": call_id, "name": "read_file", "response": {}}}

    model = {
        "id": "m1",
        "type": "gemini",
        "content": "",
        "toolCalls": [{"id": "c1", "result": "x"}],
    }
    repeat = {"id": "u2", "type": "user", "content": [response("c1")]}
    unanswered = {"id": "u3", "type": "user", "content": [response("c9")]}
    said = {"id": "u4", "type": "user", "content": [{"text": "Yes."}]}
    records = [
        {"sessionId": "s"},
        {"id": "u1", "type": "user", "content": [{"text": "Go"}]},
        model,
        repeat,
        unanswered,
        {"$set": {"messages": [model, repeat, said]}},
        repeat,
        said,
    ]
    text = "".join(json.dumps(r) + "\n" for r in records) + "not json\n"

    mended = session_mend.mend(text).splitlines()

    assert mended[:3] == text.splitlines()[:3]  # kept byte for byte
    assert [json.loads(line).get("id") for line in mended[3:5]] == ["u3", None]
    assert json.loads(mended[4])["$set"]["messages"] == [model, said]
    assert mended[5:] == [json.dumps(said), "not json"]
    assert session_mend.mend(session_mend.mend(text)) == session_mend.mend(text)


def test_a_copy_of_the_skill_in_the_task_folder_is_a_shadow_whatever_its_folder(
    tmp_path: Path,
) -> None:
    env = task_folder(tmp_path, "env-shadowed")
    copy = "---\nname: demo\ndescription: A copy.\n---\nCopy.\n"
    for path, text in (
        (".agents/skills/renamed/SKILL.md", copy),
        (".gemini/skills/demo/SKILL.md", copy),  # what staging put there
        (".gemini/skills/other/SKILL.md", copy.replace("demo", "other")),
        (".agents/skills/broken/SKILL.md", "no front matter"),
    ):
        (env / path).parent.mkdir(parents=True, exist_ok=True)
        (env / path).write_text(text)
    (env / ".agents" / "skills" / "linked").symlink_to(env / ".gemini" / "skills" / "demo")

    staged = env / ".gemini" / "skills" / "demo"
    shadow = gemini_shadow(env, name="demo", staged=staged)
    unstaged = gemini_shadow(env, name="demo", staged=None)

    assert shadow["other_copies"] == [".agents/skills/renamed"]
    assert unstaged["other_copies"] == [".agents/skills/renamed", ".gemini/skills/demo"]
    for cell, data in (("e1/with_skill", shadow), ("e1/without_skill", unstaged)):
        write_json(tmp_path / "iteration-1" / f"eval-{cell}" / "skill-shadow.json", data)
    harness = object.__new__(GeminiHarness)  # finish_iteration needs no CLI
    (warning,) = harness.finish_iteration(tmp_path / "iteration-1")
    assert warning.startswith("skill-shadow: another copy of 'demo'")
