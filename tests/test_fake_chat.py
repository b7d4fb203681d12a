"""The fake chat-completions API, driven over plain HTTP as a client of OpenAI's would."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.fake_chat import API_KEY, FakeChat, api_error, conversation, reply, tool_call

HELLO: list[dict[str, Any]] = [{"role": "user", "content": "Hello"}]


def post(
    fake: FakeChat, body: Any, *, key: str = API_KEY, path: str = "/v1/chat/completions"
) -> tuple[int, str, bytes]:
    """(status, content type, body) of one request."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        fake.url + path,
        data=data,
        headers={"authorization": f"Bearer {key}", "content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers["content-type"], answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["content-type"], error.read()


def events(raw: bytes) -> list[Any]:
    """The data of each server-sent event, JSON-decoded but for [DONE]."""
    lines = [line[len("data: ") :] for line in raw.decode().split("\n\n") if line]
    return [line if line == "[DONE]" else json.loads(line) for line in lines]


def test_a_stream_carries_text_tool_calls_in_pieces_the_finish_reason_and_usage_last() -> None:
    call = tool_call("editor", {"path": "a.txt", "new_text": "hello there"}, id="call_1")
    with FakeChat([reply("Writing it now.", call)]) as fake:
        body = {
            "model": "m",
            "messages": HELLO,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        status, kind, raw = post(fake, body)

    assert (status, kind) == (200, "text/event-stream")
    chunks = events(raw)
    assert chunks[-1] == "[DONE]"
    deltas = [c["choices"][0]["delta"] for c in chunks[:-2]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert "".join(d.get("content") or "" for d in deltas) == "Writing it now."
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert calls[0]["id"] == "call_1" and calls[0]["function"]["name"] == "editor"
    assert len(calls) > 2 and all("id" not in c for c in calls[1:])  # arguments in pieces
    arguments = "".join(c["function"]["arguments"] for c in calls)
    assert json.loads(arguments) == {"path": "a.txt", "new_text": "hello there"}
    assert chunks[-3]["choices"][0]["finish_reason"] == "tool_calls"
    usage = chunks[-2]
    assert usage["choices"] == [] and usage["usage"]["prompt_tokens"] > 0
    assert set(usage["usage"]) >= {"prompt_tokens", "completion_tokens", "prompt_tokens_details"}


def test_without_include_usage_a_stream_has_no_usage_chunk_and_json_answers_have_one() -> None:
    with FakeChat([reply("One."), reply("Two.", usage={"prompt_tokens": 9})]) as fake:
        _, _, raw = post(fake, {"model": "m", "messages": HELLO, "stream": True})
        status, kind, answer = post(fake, {"model": "m", "messages": HELLO})

    assert not any("usage" in c for c in events(raw) if isinstance(c, dict))
    assert (status, kind) == (200, "application/json")
    completion = json.loads(answer)
    assert completion["object"] == "chat.completion"
    assert completion["choices"][0]["message"] == {"role": "assistant", "content": "Two."}
    assert completion["choices"][0]["finish_reason"] == "stop"
    assert completion["usage"] == {"prompt_tokens": 9}


def test_a_prompt_whose_messages_were_seen_before_counts_them_as_cached() -> None:
    with FakeChat(conversation(reply("First."), reply("Second."))) as fake:
        first = [{"role": "system", "content": "You are a fake." * 50}, *HELLO]
        _, _, one = post(fake, {"model": "m", "messages": first})
        again = [*first, {"role": "assistant", "content": "First."}, *HELLO]
        _, _, two = post(fake, {"model": "m", "messages": again})

    usage_one, usage_two = json.loads(one)["usage"], json.loads(two)["usage"]
    assert usage_one["prompt_tokens_details"]["cached_tokens"] == 0
    cached = usage_two["prompt_tokens_details"]["cached_tokens"]
    assert cached == usage_one["prompt_tokens"] < usage_two["prompt_tokens"]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"{not json", "could not parse"),
        ({"messages": HELLO}, "model parameter"),
        ({"model": "m", "messages": []}, "non-empty"),
        ({"model": "m", "messages": HELLO, "stream_options": {}}, "only allowed when"),
        ({"model": "m", "messages": [{"role": "robot", "content": "x"}]}, "is not one of"),
        (
            {"model": "m", "messages": [*HELLO, {"role": "tool", "tool_call_id": "x"}]},
            "must be a response",
        ),
        (
            {
                "model": "m",
                "messages": [
                    *HELLO,
                    {"role": "assistant", "tool_calls": [tool_call("a", {}, id="c1")]},
                    *HELLO,
                ],
            },
            "Missing: c1",
        ),
    ],
)
def test_a_request_the_api_would_reject_is_answered_400_and_recorded(body: Any, said: str) -> None:
    with FakeChat([reply("unused")]) as fake:
        status, _, answer = post(fake, body)

    assert status == 400
    assert said in json.loads(answer)["error"]["message"]
    assert len(fake.errors) == 1 and said in fake.errors[0]


def test_credentials_are_checked_and_other_paths_refused() -> None:
    with FakeChat([reply("unused")]) as fake:
        status, _, answer = post(fake, {"model": "m", "messages": HELLO}, key="wrong")
        missing, _, _ = post(fake, {"model": "m", "messages": HELLO}, path="/v1/responses")
        listed = urllib.request.Request(
            fake.base_url + "/models", headers={"authorization": f"Bearer {API_KEY}"}
        )
        with urllib.request.urlopen(listed, timeout=10) as answer_models:
            models = json.loads(answer_models.read())

    assert status == 401 and json.loads(answer)["error"]["type"] == "invalid_request_error"
    assert missing == 404
    assert [m["id"] for m in models["data"]] == ["gpt-fake"]
    assert len(fake.errors) == 2


def test_a_script_that_runs_out_or_fails_says_so_and_a_fault_is_answered_as_scripted() -> None:
    def broken(request: Any) -> Any:
        raise RuntimeError("oops")

    with FakeChat([api_error(429, "slow down", kind="rate_limit_error")]) as fake:
        limited, _, answer = post(fake, {"model": "m", "messages": HELLO})
        exhausted, _, _ = post(fake, {"model": "m", "messages": HELLO})
        fake.script = broken
        failed, _, _ = post(fake, {"model": "m", "messages": HELLO})

    assert limited == 429 and json.loads(answer)["error"]["type"] == "rate_limit_error"
    assert (exhausted, failed) == (500, 500)
    assert ["script exhausted" in fake.errors[0], "oops" in fake.errors[1]] == [True, True]
    assert [r.call for r in fake.chat_requests] == [1, 2, 3]


def test_each_call_waits_its_delay_and_concurrent_waits_are_counted() -> None:
    with FakeChat(lambda request: reply("ok"), delay=0.3) as fake:
        started = time.monotonic()
        status, _, _ = post(fake, {"model": "m", "messages": HELLO})
        took = time.monotonic() - started

    assert status == 200 and took >= 0.3
    assert fake.peak_waiting == 1 and fake.waiting == 0
