"""llm_judge against a tiny local stand-in for the Messages API."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
import pytest

from grading.graders.judge import (
    MESSAGE_CHARS,
    JudgeUnavailable,
    judge_request,
    llm_judge,
)

from .conftest import conversation_run, say, tool, user, validate


class FakeMessagesAPI:
    """POST /v1/messages answers with the queued replies; requests are kept for asserts."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, dict[str, Any]]] = []
        self.requests: list[dict[str, Any]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 — the http.server hook name
                length = int(self.headers.get("content-length", 0))
                api.requests.append(json.loads(self.rfile.read(length)))
                status, body = api.replies.pop(0)
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def reply_with(self, *content: dict[str, Any], status: int = 200) -> None:
        self.replies.append(
            (
                status,
                {
                    "id": "msg_test",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-judge-test",
                    "content": list(content),
                    "stop_reason": "tool_use",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 120, "output_tokens": 30},
                },
            )
        )

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    fake = FakeMessagesAPI()
    yield fake
    fake.close()


@pytest.fixture
def client(api: FakeMessagesAPI) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test-key", base_url=api.base_url, max_retries=0)


def verdict(**fields: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_1", "name": "record_verdict", "input": fields}


RUN = conversation_run(
    user("Add pagination to /users."),
    tool("Bash", {"command": "git worktree add ../wt -b feature/pagination"}),
    say("Created a worktree on feature/pagination and added pagination."),
)
RUBRIC = {"id": "isolated", "type": "llm_judge", "rubric": "Did the agent work in a worktree?"}


def test_a_valid_verdict_becomes_the_result(
    client: anthropic.Anthropic, api: FakeMessagesAPI
) -> None:
    api.reply_with(
        verdict(passed=True, evidence="tool call 1: git worktree add ../wt", confidence=0.9)
    )
    outcome = llm_judge(RUN, RUBRIC, client=client, judge_model="claude-judge-test")
    assert outcome.result.as_json() == {
        "id": "isolated",
        "passed": True,
        "evidence": "tool call 1: git worktree add ../wt",
        "confidence": 0.9,
        "grader": "llm_judge",
    }
    assert outcome.usage == {
        "input_tokens": 120,
        "output_tokens": 30,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    assert outcome.response is not None and outcome.response["content"][0]["name"] == (
        "record_verdict"
    )
    artifact = outcome.artifact("Did the agent work in a worktree?")
    assert json.loads(json.dumps(artifact))["model"] == "claude-judge-test"

    (request,) = api.requests
    assert request["model"] == "claude-judge-test"
    assert request["tool_choice"] == {"type": "tool", "name": "record_verdict"}
    (tool_spec,) = request["tools"]
    assert tool_spec["input_schema"]["required"] == ["passed", "evidence", "confidence"]
    assert "strict but fair" in request["system"]
    content = request["messages"][0]["content"]
    assert "Did the agent work in a worktree?" in content
    assert "git worktree add ../wt -b feature/pagination" in content
    assert "Created a worktree on feature/pagination" in content


def test_the_assertions_own_model_wins(client: anthropic.Anthropic, api: FakeMessagesAPI) -> None:
    api.reply_with(verdict(passed=False, evidence="No worktree.", confidence=1))
    outcome = llm_judge(RUN, {**RUBRIC, "model": "claude-other"}, client=client, judge_model="x")
    assert api.requests[0]["model"] == "claude-other"
    assert outcome.result.passed is False
    assert outcome.result.confidence == 1.0


def test_a_missing_tool_call_is_a_failure_with_zero_confidence(
    client: anthropic.Anthropic, api: FakeMessagesAPI
) -> None:
    api.reply_with({"type": "text", "text": "PASS, clearly."})
    result = llm_judge(RUN, RUBRIC, client=client, judge_model="m").result
    assert result.as_json() == {
        "id": "isolated",
        "passed": False,
        "evidence": "The judge returned no verdict (no record_verdict tool call).",
        "confidence": 0.0,
        "grader": "llm_judge",
    }


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"passed": "yes", "evidence": "q", "confidence": 0.8}, "'passed' is not a boolean"),
        ({"passed": True, "confidence": 0.8}, "'evidence' is missing or empty"),
        ({"passed": True, "evidence": "  ", "confidence": 0.8}, "'evidence' is missing or empty"),
        ({"passed": True, "evidence": "q"}, "'confidence' is not a number"),
        ({"passed": True, "evidence": "q", "confidence": True}, "'confidence' is not a number"),
        ({"passed": True, "evidence": "q", "confidence": 1.5}, "'confidence' 1.5 is outside 0..1"),
    ],
)
def test_a_malformed_verdict_is_a_failure_saying_what_is_wrong(
    client: anthropic.Anthropic, api: FakeMessagesAPI, fields: dict[str, Any], problem: str
) -> None:
    api.reply_with(verdict(**fields))
    result = llm_judge(RUN, RUBRIC, client=client, judge_model="m").result
    assert result.passed is False
    assert result.confidence == 0.0
    assert result.evidence == f"The judge's verdict was malformed: {problem}."
    validate(
        {
            "assertion_results": [result.as_json()],
            "summary": {"passed": 0, "failed": 1, "total": 1, "pass_rate": 0},
        },
        "grading.schema.json",
    )


def test_an_api_error_is_unavailable_not_a_failure(
    client: anthropic.Anthropic, api: FakeMessagesAPI
) -> None:
    api.replies.append((500, {"type": "error", "error": {"type": "api_error", "message": "boom"}}))
    with pytest.raises(JudgeUnavailable, match="judge call failed"):
        llm_judge(RUN, RUBRIC, client=client, judge_model="m")


def test_it_needs_a_model() -> None:
    with pytest.raises(JudgeUnavailable, match="no judge model"):
        llm_judge(RUN, RUBRIC, client=None, judge_model=None)


def test_expectation_guidance_is_appended_to_the_rubric(
    client: anthropic.Anthropic, api: FakeMessagesAPI
) -> None:
    api.reply_with(verdict(passed=True, evidence="q", confidence=1))
    expectation = {
        "id": "mentions-the-worktree",
        "type": "llm_judge",
        "text": "Mentions the worktree",
        "rubric": "Mentions the worktree",
        "grading_guidance": "A branch alone is not enough.",
    }
    llm_judge(RUN, expectation, client=client, judge_model="m")
    content = api.requests[0]["messages"][0]["content"]
    assert "Mentions the worktree\n\nGrading guidance:\nA branch alone is not enough." in content


def test_a_long_run_is_cut_to_fit_keeping_its_start_and_end() -> None:
    events = [user("start")]
    events += [tool("Bash", {"command": f"step {i} " + "x" * 3000}, "y" * 3000) for i in range(200)]
    events += [say("final words " + "z" * (MESSAGE_CHARS + 500))]
    text = judge_request(conversation_run(*events), "rubric")
    assert len(text) < 120_000
    assert "step 0 " in text and "step 199 " in text
    assert "event(s) not shown" in text
    assert "more characters not shown" in text


def test_without_a_conversation_the_tool_calls_are_listed() -> None:
    run = dict(RUN)
    del run["conversation"]
    text = judge_request(run, "rubric")
    assert "## Tool calls" in text
    assert '[1] tool call: Bash {"command":"git worktree add ../wt -b feature/pagination"}' in text
