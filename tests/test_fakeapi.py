"""The fake Messages API, driven by the real anthropic client: replies, faults and retries."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic
import pytest

from tests.fakeapi import (
    FakeAnthropic,
    Fault,
    RecordedRequest,
    api_error,
    conversation,
    dropped,
    judge_verdict,
    overloaded,
    rate_limited,
    reply,
    reset,
    route,
    server_error,
    slow,
    text,
    tool_use,
)

MODEL = "claude-test-1"
HELLO: list[Any] = [{"role": "user", "content": "Hello"}]
VERDICT_TOOL: dict[str, Any] = {
    "name": "record_verdict",
    "description": "Record the verdict.",
    "input_schema": {
        "type": "object",
        "properties": {
            "passed": {"type": "boolean"},
            "evidence": {"type": "string"},
            "confidence": {"type": "number"},
        },
        "required": ["passed", "evidence", "confidence"],
    },
}
READ_TOOL: dict[str, Any] = {
    "name": "Read",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
}


def ask(client: anthropic.Anthropic, **kwargs: Any) -> anthropic.types.Message:
    return client.messages.create(
        **{"model": MODEL, "max_tokens": 256, "messages": HELLO, **kwargs}
    )


def gap(api: FakeAnthropic, call: int) -> float:
    """Seconds between call `call` and the one before it arriving at the fake."""
    calls = api.message_requests
    return calls[call - 1].received_at - calls[call - 2].received_at


def test_it_answers_text_with_usage_and_records_the_request(fake_api: FakeAnthropic) -> None:
    fake_api.script = [reply("Hi there.", usage={"input_tokens": 12, "output_tokens": 3})]

    message = ask(fake_api.client(), system="Be brief.")

    assert message.type == "message" and message.role == "assistant" and message.model == MODEL
    assert [(b.type, getattr(b, "text", None)) for b in message.content] == [("text", "Hi there.")]
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens == 12 and message.usage.cache_read_input_tokens == 0
    (request,) = fake_api.requests
    assert request.path == "/v1/messages" and request.call == 1
    assert request.body["max_tokens"] == 256 and request.model == MODEL
    assert request.system_text == "Be brief."
    # anthropic 2.x sends the api_key as a bearer token, not as x-api-key.
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.headers["anthropic-version"]
    assert request.retry_count == 0


def test_a_tool_use_reply_round_trips_its_tool_result(fake_api: FakeAnthropic) -> None:
    fake_api.script = conversation(
        reply(text("Reading."), tool_use("Read", {"file_path": "notes.txt"}, id="toolu_1")),
        reply("The file says hello."),
    )
    client = fake_api.client()

    first = ask(client, tools=[READ_TOOL])
    call = first.content[1]
    assert first.stop_reason == "tool_use"
    assert (call.type, call.id, call.name, call.input) == (
        "tool_use",
        "toolu_1",
        "Read",
        {"file_path": "notes.txt"},
    )
    result = {"type": "tool_result", "tool_use_id": call.id, "content": "hello"}
    history = [
        *HELLO,
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [result]},
    ]
    final = ask(client, tools=[READ_TOOL], messages=history)

    assert final.content[0].text == "The file says hello."
    assert fake_api.requests[1].tool_results == [result]


def test_it_rejects_a_tool_use_without_its_tool_result_like_the_real_api(
    fake_api: FakeAnthropic,
) -> None:
    history = [
        *HELLO,
        {"role": "assistant", "content": [tool_use("Read", {}, id="toolu_9")]},
        {"role": "user", "content": "go on"},
    ]
    with pytest.raises(anthropic.BadRequestError, match="toolu_9"):
        ask(fake_api.client(), messages=history)
    assert fake_api.calls == 1  # a 400 is not retried
    assert "tool_result" in fake_api.errors.pop()


def test_a_forced_tool_call_answers_with_the_named_tool(fake_api: FakeAnthropic) -> None:
    fake_api.script = [judge_verdict(True, 'quote: "hello"', 0.9)]

    message = ask(
        fake_api.client(),
        tools=[READ_TOOL, VERDICT_TOOL],
        tool_choice={"type": "tool", "name": "record_verdict"},
    )

    (call,) = message.content
    assert message.stop_reason == "tool_use"
    assert call.type == "tool_use" and call.name == "record_verdict"
    assert call.input == {"passed": True, "evidence": 'quote: "hello"', "confidence": 0.9}
    assert fake_api.requests[0].forced_tool == "record_verdict"


def test_it_simulates_prompt_caching_of_the_marked_prefix(fake_api: FakeAnthropic) -> None:
    fake_api.script = [reply("one"), reply("two")]
    system = [{"type": "text", "text": "Skills… " * 200, "cache_control": {"type": "ephemeral"}}]
    tools = [{**READ_TOOL, "cache_control": {"type": "ephemeral"}}]
    client = fake_api.client()

    first = ask(client, system=system, tools=tools).usage
    second = ask(client, system=system, tools=tools, messages=[{"role": "user", "content": "Hi"}])

    assert first.cache_creation_input_tokens > 0 and first.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0
    assert fake_api.requests[0].body["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_the_client_waits_as_long_as_retry_after_says_on_a_429(fake_api: FakeAnthropic) -> None:
    fake_api.script = [reply("ok")]
    fake_api.fail_first(1, rate_limited(retry_after=0.3))

    message = ask(fake_api.client(max_retries=2))

    assert message.content[0].text == "ok"
    assert fake_api.calls == 2 and fake_api.message_requests[1].retry_count == 1
    assert 0.3 <= gap(fake_api, 2) < 0.8  # fractional seconds are honoured


def test_retry_after_ms_wins_over_retry_after(fake_api: FakeAnthropic) -> None:
    fake_api.script = [reply("ok")]
    fake_api.fail_first(1, overloaded(retry_after=5, retry_after_ms=100))

    ask(fake_api.client(max_retries=1))

    assert 0.1 <= gap(fake_api, 2) < 0.6


def test_overloaded_and_server_errors_are_retried_until_success(fake_api: FakeAnthropic) -> None:
    fake_api.script = [reply("ok")]
    fake_api.fail_call(1, overloaded(retry_after_ms=20))
    fake_api.fail_call(2, server_error(500, retry_after_ms=20))
    fake_api.fail_call(3, server_error(502, retry_after_ms=20))
    fake_api.fail_call(4, server_error(503, retry_after_ms=20))

    message = ask(fake_api.client(max_retries=4))

    assert message.content[0].text == "ok"
    assert [r.status for r in fake_api.requests] == [529, 500, 502, 503, 200]


def test_the_client_gives_up_after_max_retries(fake_api: FakeAnthropic) -> None:
    fake_api.fail_first(3, overloaded(retry_after_ms=10))

    with pytest.raises(anthropic.OverloadedError) as raised:
        ask(fake_api.client(max_retries=2))

    assert raised.value.type == "overloaded_error"
    assert fake_api.calls == 3


def test_x_should_retry_overrides_the_status(fake_api: FakeAnthropic) -> None:
    fake_api.script = [reply("ok")]
    retry = {"x-should-retry": "true", "retry-after-ms": "10"}
    fake_api.fail_call(1, api_error(400, "invalid_request_error", "again", headers=retry))
    fake_api.fail_call(3, api_error(500, "api_error", "final", headers={"x-should-retry": "false"}))
    client = fake_api.client(max_retries=2)

    assert ask(client).content[0].text == "ok"
    with pytest.raises(anthropic.InternalServerError):
        ask(client)
    assert fake_api.calls == 3


@pytest.mark.parametrize("fault", [dropped(), reset()], ids=["dropped", "reset"])
def test_a_broken_connection_is_retried_with_backoff(fake_api: FakeAnthropic, fault: Fault) -> None:
    fake_api.script = [reply("ok")]
    fake_api.fail_first(1, fault)

    message = ask(fake_api.client(max_retries=1))

    assert message.content[0].text == "ok"
    assert fake_api.requests[0].status is None
    assert 0.375 <= gap(fake_api, 2) < 1.0  # no response, so no retry-after: 0.5 s × jitter


def test_a_slow_response_times_out_after_retries(fake_api: FakeAnthropic) -> None:
    fake_api.fail_first(2, slow(1.0))
    client = fake_api.client(max_retries=1, timeout=0.3)

    started = time.monotonic()
    with pytest.raises(anthropic.APITimeoutError):
        ask(client)

    assert fake_api.calls == 2
    # Two timeouts and a backoff; waiting for the 1 s answers would take over 2 s.
    assert 0.6 + 0.375 <= time.monotonic() - started < 2.0


def test_a_streamed_reply_carries_the_same_text_tool_call_and_usage(
    fake_api: FakeAnthropic,
) -> None:
    scripted = reply(
        text("Reading the notes file now."),
        tool_use("Read", {"file_path": "notes.txt", "limit": 20}, id="toolu_7"),
        usage={"input_tokens": 40, "output_tokens": 9, "cache_read_input_tokens": 5},
    )
    fake_api.script = [scripted, scripted]
    client = fake_api.client()

    with client.messages.stream(
        model=MODEL, max_tokens=256, messages=HELLO, tools=[READ_TOOL]
    ) as stream:
        deltas = [e.delta for e in stream if e.type == "content_block_delta"]
        streamed = stream.get_final_message()
    plain = ask(client, tools=[READ_TOOL])

    assert [b.to_dict() for b in streamed.content] == [b.to_dict() for b in plain.content]
    assert streamed.content[1].input == {"file_path": "notes.txt", "limit": 20}
    assert (streamed.stop_reason, streamed.usage) == (plain.stop_reason, plain.usage)
    assert streamed.usage.input_tokens == 40 and streamed.usage.output_tokens == 9
    # Several deltas per block: a client that keeps only the last one gets the text wrong.
    assert sum(1 for d in deltas if d.type == "text_delta") > 1
    assert sum(1 for d in deltas if d.type == "input_json_delta") > 1
    assert fake_api.requests[0].body["stream"] is True


def test_a_stream_is_chunked_server_sent_events_in_the_apis_order(
    fake_api: FakeAnthropic,
) -> None:
    fake_api.script = [reply("Hi.", usage={"input_tokens": 3, "output_tokens": 2})]
    body = {"model": MODEL, "max_tokens": 5, "messages": HELLO, "stream": True}
    request = urllib.request.Request(
        f"{fake_api.url}/v1/messages",
        data=json.dumps(body).encode(),
        headers={"x-api-key": "test-key", "content-type": "application/json"},
        method="POST",
    )

    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.headers["content-type"] == "text/event-stream"
        assert response.headers["transfer-encoding"] == "chunked"
        lines = response.read().decode().splitlines()

    names = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
    data = [json.loads(line.removeprefix("data: ")) for line in lines if line.startswith("data: ")]
    assert [name for i, name in enumerate(names) if name not in names[:i]] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert [d["type"] for d in data] == names
    assert "".join(d["delta"]["text"] for d in data if d["type"] == "content_block_delta") == "Hi."
    assert data[0]["message"]["usage"]["output_tokens"] == 1
    assert data[-2]["delta"]["stop_reason"] == "end_turn"
    assert data[-2]["usage"]["output_tokens"] == 2


def test_a_running_out_script_fails_fast_and_is_reported(fake_api: FakeAnthropic) -> None:
    with pytest.raises(anthropic.InternalServerError, match="script exhausted"):
        ask(fake_api.client(max_retries=2))
    assert fake_api.calls == 1
    assert fake_api.errors == ["call 1: script exhausted"]
    fake_api.errors.clear()


def test_a_request_without_credentials_is_refused(fake_api: FakeAnthropic) -> None:
    body = json.dumps({"model": MODEL, "max_tokens": 5, "messages": HELLO}).encode()
    request = urllib.request.Request(f"{fake_api.url}/v1/messages", data=body, method="POST")

    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=5)

    assert raised.value.code == 401
    assert json.load(raised.value)["error"]["type"] == "authentication_error"
    fake_api.errors.clear()


def test_count_tokens_answers_an_estimate(fake_api: FakeAnthropic) -> None:
    counted = fake_api.client().messages.count_tokens(model=MODEL, messages=HELLO)
    assert counted.input_tokens > 0 and fake_api.calls == 0


def test_sixteen_concurrent_calls_wait_at_the_same_time() -> None:
    # Counted, not timed: on a loaded CI machine a wall-clock bound flakes (1.07 s once for 1.0).
    with FakeAnthropic([reply("ok")] * 17, delay=0.5) as api:
        client = api.client()
        ask(client)  # warm up the client
        assert api.peak_waiting == 1
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            messages = list(pool.map(lambda _: ask(client), range(16)))
        elapsed = time.monotonic() - started

    assert [m.content[0].text for m in messages] == ["ok"] * 16
    assert elapsed >= 0.5  # each answer did wait its delay
    assert api.peak_waiting >= 8  # one after another it would stay 1; all at once, 16
    assert api.waiting == 0


def test_routing_keeps_concurrent_conversations_apart(fake_api: FakeAnthropic) -> None:
    def arm(request: RecordedRequest) -> str:
        skill = "with-skill" if "Skill" in request.tool_names else "without"
        return f"{request.first_user_text}/{skill}"

    arms = [
        f"{prompt}/{skill}"
        for prompt in ("eval-a", "eval-b")
        for skill in ("with-skill", "without")
    ]
    fake_api.script = route(
        arm, {key: conversation(reply(f"{key} 1"), reply(f"{key} 2")) for key in arms}
    )
    client = fake_api.client()
    skill_tool = {**READ_TOOL, "name": "Skill"}

    def run(prompt: str, tools: list[Any]) -> list[str]:
        said: list[str] = []
        history: list[Any] = [{"role": "user", "content": prompt}]
        for _ in range(2):
            message = ask(client, messages=history, tools=tools)
            said.append(message.content[0].text)
            history += [
                {"role": "assistant", "content": said[-1]},
                {"role": "user", "content": "go"},
            ]
        return said

    runs = [("eval-a", [READ_TOOL]), ("eval-a", [skill_tool]), ("eval-b", [skill_tool])]
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda r: run(*r), runs))

    assert results == [
        ["eval-a/without 1", "eval-a/without 2"],
        ["eval-a/with-skill 1", "eval-a/with-skill 2"],
        ["eval-b/with-skill 1", "eval-b/with-skill 2"],
    ]


def test_stopping_cuts_idle_and_busy_connections_and_leaves_no_thread() -> None:
    before = set(threading.enumerate())
    outcome: list[BaseException] = []
    with FakeAnthropic([reply("ok")]) as api:
        client = api.client(max_retries=0)
        ask(client)  # leaves an idle keep-alive connection in the pool
        api.fail_next(1, slow(30))
        busy = threading.Thread(target=lambda: outcome.extend(_error_of(lambda: ask(client))))
        busy.start()
        while api.calls < 2:
            time.sleep(0.01)
        started = time.monotonic()
    busy.join(timeout=5)

    assert time.monotonic() - started < 2  # not the 30 s the slow answer would take
    assert isinstance(outcome[0], anthropic.APIConnectionError)
    assert set(threading.enumerate()) <= before


def _error_of(call: Any) -> list[BaseException]:
    try:
        call()
    except BaseException as error:
        return [error]
    return []
