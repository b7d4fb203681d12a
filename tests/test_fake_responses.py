"""The fake Responses API over plain HTTP: streamed and whole answers, usage, credentials,
malformed requests rejected loudly, latency."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from tests.fake_responses import (
    FakeResponses,
    api_error,
    conversation,
    custom_tool_call,
    function_call,
    reply,
)

KEY = "test-key"


def post(api: FakeResponses, body: Any, *, key: str = KEY, path: str = "/responses") -> Any:
    """(status, content type, the body: parsed JSON, or the stream's events as a list)."""
    request = urllib.request.Request(
        api.url + path,
        data=json.dumps(body).encode(),
        headers={"authorization": f"Bearer {key}", "content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            kind, raw = response.headers["content-type"], response.read().decode()
            status = response.status
    except urllib.error.HTTPError as error:
        return error.code, error.headers["content-type"], json.loads(error.read())
    if kind != "text/event-stream":
        return status, kind, json.loads(raw)
    events = []
    for block in raw.strip().split("\n\n"):
        name, data = block.split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert name == f"event: {event['type']}"
        events.append(event)
    return status, kind, events


def ask(**extra: Any) -> dict[str, Any]:
    return {"model": "gpt-fake", "input": [{"role": "user", "content": "Hello"}], **extra}


def test_a_streamed_reply_arrives_as_the_apis_events_in_order() -> None:
    call = function_call("exec_command", {"cmd": "ls -la"})
    with FakeResponses([reply("Looking.", call)]) as api:
        status, kind, events = post(api, ask(stream=True))
    assert (status, kind) == (200, "text/event-stream")
    types = [e["type"] for e in events]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    added = [e["item"]["type"] for e in events if e["type"] == "response.output_item.added"]
    assert added == ["message", "function_call"]
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    arguments = "".join(
        e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"
    )
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert text == "Looking." and json.loads(arguments) == {"cmd": "ls -la"} and len(deltas) > 1
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert done[1] == call
    completed = events[-1]["response"]
    assert completed["status"] == "completed" and completed["output"] == done
    usage = completed["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["input_tokens_details"] == {"cached_tokens": 0}


def test_without_stream_the_response_object_comes_whole() -> None:
    with FakeResponses([reply("Hi.")]) as api:
        status, kind, body = post(api, ask())
    assert (status, kind) == (200, "application/json")
    assert body["object"] == "response" and body["output"][0]["content"][0]["text"] == "Hi."


def test_a_repeated_prefix_is_reported_as_cached() -> None:
    first = ask()
    longer = ask(input=[*first["input"], {"role": "user", "content": "And more."}])
    with FakeResponses([reply("a"), reply("b")]) as api:
        post(api, first)
        post(api, longer)
    one, two = (r.usage for r in api.requests)
    assert one["input_tokens_details"]["cached_tokens"] == 0
    assert 0 < two["input_tokens_details"]["cached_tokens"] == one["input_tokens"]
    assert two["input_tokens"] > one["input_tokens"]


def test_a_reply_can_give_its_own_usage() -> None:
    usage = {"input_tokens": 50, "cached_tokens": 20, "output_tokens": 5}
    with FakeResponses([reply("x", usage=usage)]) as api:
        _, _, body = post(api, ask())
    assert body["usage"]["input_tokens"] == 50
    assert body["usage"]["input_tokens_details"]["cached_tokens"] == 20


def test_a_wrong_key_is_refused_and_recorded() -> None:
    with FakeResponses([reply("never")]) as api:
        status, _, body = post(api, ask(), key="sk-other")
    assert status == 401 and body["error"]["type"] == "invalid_request_error"
    assert api.errors and "Bearer" in api.errors[0]


def test_malformed_requests_are_refused_loudly() -> None:
    orphan = {"type": "function_call_output", "call_id": "call_nowhere", "output": "x"}
    bodies = [
        {"input": "hi"},  # no model
        {"model": "m", "input": []},
        {"model": "m", "input": "hi", "tools": {}},
        {"model": "m", "input": [orphan]},
    ]
    with FakeResponses([reply("never")] * 4) as api:
        answers = [post(api, body) for body in bodies]
        status, _, _ = post(api, ask(), path="/chat/completions")
    assert [a[0] for a in answers] == [400, 400, 400, 400] and status == 404
    assert len(api.errors) == 5
    assert "No tool call found for output call_nowhere" in api.errors[3]


def test_tool_outputs_that_answer_their_calls_pass() -> None:
    call = custom_tool_call("apply_patch", "*** Begin Patch\n*** End Patch\n")
    output = {"type": "custom_tool_call_output", "call_id": call["call_id"], "output": "ok"}
    with FakeResponses(conversation(reply(call), reply("Patched."))) as api:
        post(api, ask())
        _, _, body = post(api, ask(input=[*ask()["input"], call, output]))
    assert body["output"][0]["content"][0]["text"] == "Patched."
    assert api.requests[1].steps == 1 and api.requests[1].outputs() == ["ok"]
    assert not api.errors


def test_a_script_that_runs_out_is_an_error_not_a_hang() -> None:
    with FakeResponses([]) as api:
        status, _, body = post(api, ask())
    assert status == 500 and "script exhausted" in body["error"]["message"]
    assert api.errors == ["call 1: script exhausted"]


def test_an_api_error_is_served_in_openais_shape() -> None:
    with FakeResponses([api_error(429, "rate_limit_error", "slow down", retry=True)]) as api:
        status, _, body = post(api, ask())
    assert status == 429
    assert body == {
        "error": {"message": "slow down", "type": "rate_limit_error", "param": None, "code": None}
    }


def test_each_call_waits_the_configured_delay() -> None:
    with FakeResponses([reply("a"), reply("b")], delay=0.3) as api:
        started = time.monotonic()
        post(api, ask())
        post(api, ask(stream=True))
        took = time.monotonic() - started
    assert 0.6 <= took < 3
