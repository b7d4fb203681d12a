"""A fake OpenAI chat-completions API on 127.0.0.1, for driving agent CLIs that speak it (Cline).

    with FakeChat([reply(tool_call("editor", {"path": "a.txt", "new_text": "hi"})),
                   reply("Done.")]) as api:
        ...  # OPENAI_BASE_URL=api.base_url, OPENAI_API_KEY=api.api_key
        assert api.requests[0].tool_names[:1] == ["skills"]

A script is a queue of `Reply`/`Fault` items, or a callable `respond(request) -> Reply | Fault`
(`conversation` answers by how many assistant messages a request holds, so a run's steps stay
right whatever else runs beside it). Calls are numbered from 1 over `POST
/v1/chat/completions`; `delay` seconds are added to each, as a real model takes its time.

Requests need `Authorization: Bearer <api_key>`. A request with `"stream": true` gets the
reply as server-sent events, as the API streams it: a first chunk with the role, the text
and each tool call's arguments in several deltas (a tool call's first delta carries its id
and name), a chunk with the finish reason, then — when `stream_options.include_usage` —
a chunk of `usage` with no choices, and `data: [DONE]`. Usage ({prompt_tokens,
completion_tokens, prompt_tokens_details.cached_tokens}) is simulated unless a reply gives
its own: a prompt's messages already seen in an earlier request count as cached.
`GET /v1/models` lists `models`. `python -m tests.fake_chat [DELAY]` serves `auto_reply`.

A request the real API would reject (no JSON object, no model, no messages, a tool message
answering no call, a call left unanswered) is answered with a 400 in OpenAI's error shape and
appended to `errors`, as is a script that ran out or raised; the `fake_chat` fixture fails the
test if any remain.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.fakeserver import FakeHTTPServer, ScriptedFake

API_KEY = "test-openai-key"
_ids = itertools.count(1)
ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


# --- what the server answers -------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A successful answer: text and/or tool calls; `usage=None` simulates the tokens."""

    content: str | None
    tool_calls: tuple[dict[str, Any], ...] = ()
    finish_reason: str = "stop"
    usage: Mapping[str, Any] | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class Fault:
    """An error answer (`status`, a JSON body in OpenAI's shape)."""

    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


Outcome = Reply | Fault
Responder = Callable[["ChatRequest"], Outcome]


def tool_call(name: str, arguments: Mapping[str, Any], id: str | None = None) -> dict[str, Any]:
    return {
        "id": id or f"call_fake{next(_ids):06d}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(dict(arguments))},
    }


def reply(
    *parts: dict[str, Any] | str,
    usage: Mapping[str, Any] | None = None,
    delay: float = 0.0,
) -> Reply:
    """Strings are the message's text (joined), dicts its tool calls; the finish reason is
    `tool_calls` when it calls a tool."""
    texts = [p for p in parts if isinstance(p, str)]
    calls = tuple(p for p in parts if isinstance(p, dict))
    return Reply(
        "".join(texts) if texts else None,
        calls,
        "tool_calls" if calls else "stop",
        usage,
        delay,
    )


def api_error(status: int, message: str, *, kind: str = "invalid_request_error") -> Fault:
    """{"error": {"message", "type", "param", "code"}}, as the API answers an error."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return Fault(status, json.dumps(body).encode())


# --- what the server saw -----------------------------------------------------------------


@dataclass
class ChatRequest:
    """One request as received: `headers` have lower-case names, `body` is the parsed JSON."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    call: int = 0  # 1-based over POST /v1/chat/completions; 0 for other paths
    status: int | None = None
    received_at: float = field(default_factory=time.monotonic)

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return (self.body.get("messages") if isinstance(self.body, dict) else None) or []

    @property
    def tool_names(self) -> list[str]:
        tools = (self.body.get("tools") if isinstance(self.body, dict) else None) or []
        return [str((t.get("function") or {}).get("name", "")) for t in tools]

    @property
    def assistant_turns(self) -> int:
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    @property
    def text(self) -> str:
        """Every message's text, for a script to look things up in."""
        return json.dumps(self.messages, ensure_ascii=False)

    @property
    def first_user_text(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return _text_of(users[0]) if users else ""

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """The tool messages after the last assistant message."""
        results: list[dict[str, Any]] = []
        for message in self.messages:
            if message.get("role") == "assistant":
                results = []
            elif message.get("role") == "tool":
                results.append(message)
        return results


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


# --- responders --------------------------------------------------------------------------


def conversation(*steps: Outcome) -> Responder:
    """Answer by turn: step i answers a request holding i assistant messages."""

    def respond(request: ChatRequest) -> Outcome:
        turn = request.assistant_turns
        if turn >= len(steps):
            raise LookupError(f"conversation has {len(steps)} steps; request is at turn {turn}")
        return steps[turn]

    return respond


def auto_reply(request: ChatRequest) -> Outcome:
    return reply("Done.")


# --- the server --------------------------------------------------------------------------


class FakeChat(ScriptedFake[ChatRequest, Outcome]):
    """The fake API server; a context manager. `base_url` ends in /v1, as OpenAI's does."""

    name = "fakechat"

    def __init__(
        self,
        script: Sequence[Outcome] | Responder = (),
        *,
        delay: float = 0.0,
        api_key: str = API_KEY,
        models: Sequence[str] = ("gpt-fake",),
    ) -> None:
        super().__init__(script, delay=delay)
        self.api_key = api_key
        self.models = list(models)
        self.waiting = 0
        self.peak_waiting = 0
        self._seen: set[str] = set()

    @property
    def chat_requests(self) -> list[ChatRequest]:
        return [r for r in self.requests if r.call]

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    # answering
    def answer(self, request: ChatRequest) -> Outcome:
        self.record(request, call=True)
        problem = self._reject(request)
        if problem is not None:
            return problem
        return self.scripted(request)

    def _script_error(self, message: str) -> Fault:
        self.errors.append(message)
        return api_error(500, f"fake_chat: {message}", kind="server_error")

    def _reject(self, request: ChatRequest) -> Fault | None:
        """The 401/400 the real API would answer (recorded in `errors`), or None."""
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            problem = api_error(401, "Incorrect API key provided.")
        else:
            reason = _malformed(request.body)
            problem = None if reason is None else api_error(400, reason)
        if problem is not None:
            self.errors.append(f"call {request.call}: rejected: {problem.body.decode()}")
        return problem

    def usage(self, outcome: Reply, request: ChatRequest) -> dict[str, Any]:
        if outcome.usage is not None:
            return dict(outcome.usage)
        prompt = cached = 0
        prefix = hashlib.sha256()
        with self._lock:
            for message in request.messages:
                tokens = _tokens(message)
                prompt += tokens
                prefix.update(json.dumps(message, sort_keys=True).encode())
                key = prefix.hexdigest()
                if key in self._seen and cached == prompt - tokens:
                    cached = prompt
                self._seen.add(key)
        completion = _tokens(outcome.content or "") + sum(_tokens(c) for c in outcome.tool_calls)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": max(1, completion),
            "total_tokens": prompt + max(1, completion),
            "prompt_tokens_details": {"cached_tokens": cached},
        }


def _tokens(value: Any) -> int:
    text = value if isinstance(value, str) else json.dumps(value)
    return max(1, len(text) // 4)


def _malformed(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "We could not parse the JSON body of your request."
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    if body.get("stream_options") is not None and body.get("stream") is not True:
        return "The 'stream_options' parameter is only allowed when 'stream' is enabled."
    open_calls: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ROLES:
            return f"messages[{i}].role: {role!r} is not one of {sorted(ROLES)}"
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                return (
                    f"Invalid parameter: messages[{i}] with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            open_calls.discard(call_id)
            continue
        if open_calls:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Missing: {', '.join(sorted(open_calls))}"
            )
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                try:
                    json.loads(function.get("arguments") or "")
                except ValueError:
                    return f"messages[{i}].tool_calls: arguments are not JSON"
                open_calls.add(str(call.get("id")))
    if open_calls:
        return f"tool calls left without an answer: {', '.join(sorted(open_calls))}"
    return None


class _Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"
    timeout = 30
    server: FakeHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = ChatRequest("POST", self.path.split("?")[0], headers, body)
        if request.path != "/v1/chat/completions":
            fake.errors.append(f"POST {self.path}: not an endpoint of the fake")
            self._send(request, api_error(404, f"Unknown request URL: POST {self.path}"))
            return
        outcome = fake.answer(request)
        wait = fake.delay + (outcome.delay if isinstance(outcome, Reply) else 0.0)
        if wait:
            with fake._lock:
                fake.waiting += 1
                fake.peak_waiting = max(fake.peak_waiting, fake.waiting)
            try:
                if fake._stopping.wait(wait):
                    self.close_connection = True
                    return
            finally:
                with fake._lock:
                    fake.waiting -= 1
        self._send(request, outcome)

    def do_GET(self) -> None:
        fake = self.server.fake
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = ChatRequest("GET", self.path.split("?")[0], headers, None)
        fake.requests.append(request)
        if request.path != "/v1/models":
            self._send(request, api_error(404, f"Unknown request URL: GET {self.path}"))
        elif headers.get("authorization") != f"Bearer {fake.api_key}":
            self._send(request, api_error(401, "Incorrect API key provided."))
        else:
            models = [{"id": m, "object": "model", "owned_by": "fake"} for m in fake.models]
            self._json(request, 200, {"object": "list", "data": models})

    def _send(self, request: ChatRequest, outcome: Outcome) -> None:
        if isinstance(outcome, Fault):
            request.status = outcome.status
            self.send_response(outcome.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(outcome.body)))
            for name, value in outcome.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(outcome.body)
            return
        body = request.body
        usage = self.server.fake.usage(outcome, request)
        if body.get("stream") is True:
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(request, outcome, usage if include else None)
            return
        message: dict[str, Any] = {"role": "assistant", "content": outcome.content}
        if outcome.tool_calls:
            message["tool_calls"] = list(outcome.tool_calls)
        self._json(
            request,
            200,
            {
                **_envelope(request, "chat.completion"),
                "choices": [
                    {"index": 0, "message": message, "finish_reason": outcome.finish_reason}
                ],
                "usage": usage,
            },
        )

    def _json(self, request: ChatRequest, status: int, data: Any) -> None:
        request.status = status
        encoded = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(encoded)))
        self.end_headers()
        self.wfile.write(encoded)

    def _stream(self, request: ChatRequest, outcome: Reply, usage: dict[str, Any] | None) -> None:
        request.status = 200
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for data in stream_chunks(request, outcome, usage):
            event = f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")


FakeChat.handler = _Handler


def _envelope(request: ChatRequest, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake{request.call:06d}",
        "object": kind,
        "created": 1_800_000_000,
        "model": request.model,
    }


def stream_chunks(
    request: ChatRequest, outcome: Reply, usage: dict[str, Any] | None
) -> list[dict[str, Any] | str]:
    """The answer's SSE data, in order: deltas, the finish reason, usage, [DONE]."""
    base = _envelope(request, "chat.completion.chunk")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks: list[dict[str, Any] | str] = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in _pieces(outcome.content or "") if piece]
    for index, call in enumerate(outcome.tool_calls):
        function = call["function"]
        opening = {"index": index, "id": call["id"], "type": "function"}
        opening["function"] = {"name": function["name"], "arguments": ""}
        chunks.append(chunk({"tool_calls": [opening]}))
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in _pieces(function["arguments"])
        ]
    chunks.append(chunk({}, outcome.finish_reason))
    if usage is not None:
        chunks.append({**base, "choices": [], "usage": usage})
    chunks.append("[DONE]")
    return chunks


def _pieces(value: str, parts: int = 3) -> list[str]:
    size = max(1, -(-len(value) // parts))
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


# --- pytest ------------------------------------------------------------------------------


@pytest.fixture
def fake_chat() -> Iterator[FakeChat]:
    """A running fake with an empty script; fails the test on rejected requests."""
    with FakeChat() as api:
        yield api
    if api.errors:
        pytest.fail("fake chat-completions API: " + "; ".join(api.errors))


if __name__ == "__main__":  # python -m tests.fake_chat [DELAY]: serve auto replies until ^C
    import sys

    with FakeChat(auto_reply, delay=float(sys.argv[1]) if len(sys.argv) > 1 else 0.0) as api:
        print(api.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
