"""The fake Gemini API answers as the real one does, and refuses what the real one would."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from tests.fake_gemini import (
    FakeGemini,
    api_error,
    fake_gemini_fixture,  # noqa: F401 - the fake_gemini fixture
    function_call,
    reply,
)

MODEL = "gemini-2.5-pro"
HELLO = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}


def call(
    fake: FakeGemini,
    action: str,
    body: Any = HELLO,
    *,
    query: str = "",
    headers: dict[str, str] | None = None,
    path: str | None = None,
) -> tuple[int, str, str]:
    url = fake.url + (path or f"/v1beta/models/{MODEL}:{action}") + query
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={
            "content-type": "application/json",
            **({"x-goog-api-key": "k"} if headers is None else headers),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers.get("content-type"), answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("content-type"), error.read().decode()


def chunks(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def test_a_stream_carries_text_in_pieces_a_call_whole_and_usage_on_every_chunk(
    fake_gemini: FakeGemini,
) -> None:
    fake_gemini.script = [reply("Reading it now.", function_call("read_file", {"file_path": "a"}))]

    status, kind, body = call(fake_gemini, "streamGenerateContent", query="?alt=sse")

    assert (status, kind) == (200, "text/event-stream")
    events = chunks(body)
    parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
    assert "".join(p.get("text", "") for p in parts) == "Reading it now."
    assert parts[-1] == {"functionCall": {"name": "read_file", "args": {"file_path": "a"}}}
    assert [e["candidates"][0].get("finishReason") for e in events][-1] == "STOP"
    assert all("finishReason" not in e["candidates"][0] for e in events[:-1])
    counts = [e["usageMetadata"]["candidatesTokenCount"] for e in events]
    assert counts == sorted(counts) and events[-1]["usageMetadata"]["promptTokenCount"] > 0
    (seen,) = fake_gemini.requests
    assert (seen.model, seen.action, seen.call, seen.key) == (
        MODEL,
        "streamGenerateContent",
        1,
        "k",
    )


def test_generate_content_answers_whole_and_count_tokens_is_not_a_call(
    fake_gemini: FakeGemini,
) -> None:
    usage = {"promptTokenCount": 12, "cachedContentTokenCount": 4, "candidatesTokenCount": 3}
    fake_gemini.script = [reply("Whole.", usage=usage)]

    whole = json.loads(call(fake_gemini, "generateContent", query="?key=k", headers={})[2])
    counted = json.loads(call(fake_gemini, "countTokens")[2])

    assert whole["candidates"][0]["content"] == {"role": "model", "parts": [{"text": "Whole."}]}
    assert whole["usageMetadata"] == {**usage, "totalTokenCount": 15}
    assert counted["totalTokens"] > 0 and fake_gemini.calls == 1


def test_what_the_real_api_would_refuse_is_refused_loudly_in_googles_shape() -> None:
    unanswered = {
        "contents": [
            {"role": "user", "parts": [{"text": "Go"}]},
            {"role": "model", "parts": [function_call("read_file", {"file_path": "a"})]},
            {"role": "user", "parts": [{"text": "no response"}]},
        ]
    }
    with FakeGemini([reply("never")] * 5) as fake:
        refusals = [
            call(fake, "generateContent", headers={}),
            call(fake, "streamGenerateContent"),
            call(fake, "generateContent", {"contents": []}),
            call(fake, "generateContent", unanswered),
            call(fake, "generateContent", path="/v1/models/x:generateContent"),
        ]

    assert [status for status, _, _ in refusals] == [401, 400, 400, 400, 404]
    errors = [json.loads(body)["error"] for _, _, body in refusals]
    assert [e["status"] for e in errors] == [
        "UNAUTHENTICATED",
        "INVALID_ARGUMENT",
        "INVALID_ARGUMENT",
        "INVALID_ARGUMENT",
        "NOT_FOUND",
    ]
    assert "function response parts (0)" in errors[3]["message"]
    assert len(fake.errors) == 5


def test_a_scripted_error_is_answered_and_a_responder_sees_the_conversation() -> None:
    def respond(request: Any) -> Any:
        if request.model_turns == 0:
            return api_error(429, "slow down")
        return reply(f"turn {request.model_turns}: {request.function_responses[0]['name']}")

    answered = {
        "contents": [
            {"role": "user", "parts": [{"text": "Go"}]},
            {"role": "model", "parts": [function_call("glob", {"pattern": "*"})]},
            {"role": "user", "parts": [{"functionResponse": {"name": "glob", "response": {}}}]},
        ]
    }
    with FakeGemini(respond) as fake:
        limited = call(fake, "generateContent")
        later = json.loads(call(fake, "generateContent", answered)[2])

    assert limited[0] == 429 and json.loads(limited[2])["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert later["candidates"][0]["content"]["parts"] == [{"text": "turn 1: glob"}]
    assert not fake.errors


def test_an_exhausted_script_is_an_error_of_the_test() -> None:
    with FakeGemini([]) as fake:
        status, _, body = call(fake, "generateContent")

    assert status == 400 and "script exhausted" in json.loads(body)["error"]["message"]
    assert fake.errors == ["call 1: script exhausted"]


def test_each_generate_call_waits_the_configured_delay() -> None:
    with FakeGemini([reply("a"), reply("b")], delay=0.3) as fake:
        started = time.monotonic()
        call(fake, "countTokens")
        counted = time.monotonic() - started
        call(fake, "generateContent")
        call(fake, "streamGenerateContent", query="?alt=sse")
        elapsed = time.monotonic() - started

    assert counted < 0.3 <= 0.6 <= elapsed < 3
