"""A fake OpenAI Responses API on 127.0.0.1, for driving the real Codex CLI in tests.

    with FakeResponses([reply(function_call("exec_command", {"cmd": "ls"})), reply("Ok.")]) as api:
        ...  # give Codex base_url=api.url (it ends in /v1) and the key "test-key"
        assert api.requests[0].tool_names

A script is a queue of `Reply`/`Fault` items, or a callable `respond(request) -> Reply | Fault`
(`conversation` answers by step, deterministic under concurrency and retries). Calls are
numbered from 1 over `POST /v1/responses` attempts.

Requests need `Authorization: Bearer <api_key>`. A request with `"stream": true` gets its reply
as the real server-sent events (response.created, response.in_progress, then per output item
response.output_item.added, its deltas — response.output_text.delta or
response.function_call_arguments.delta — and response.output_item.done, then
response.completed with the usage: input_tokens, input_tokens_details.cached_tokens,
output_tokens), one HTTP chunk each; without it, the response object as JSON. Usage is
simulated (prompt caching by longest previously seen prefix of instructions, tools and input)
unless a reply gives its own. `delay` seconds are added to every call, as a real model takes.

Anything that is a bug in the test rather than in the client (a script that ran out or raised,
a request the real API would reject: a bad key, no model, a function_call_output without its
function_call) answers a non-retryable error and is appended to `api.errors`.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

from tests.fakeserver import FakeHTTPServer, ScriptedFake

_ids = itertools.count(1)
RESPONSES = "/v1/responses"
#: What Codex lists on `GET /v1/models` for a custom provider (it asks on start-up).
MODELS = "/v1/models"


# --- what the server answers -------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A successful answer: its output items; `usage=None` simulates tokens and caching."""

    output: tuple[dict[str, Any], ...]
    usage: Mapping[str, int] | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class Fault:
    """A failed answer: an HTTP error in OpenAI's shape, or a dropped connection."""

    kind: Literal["status", "drop"]
    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)


Outcome = Reply | Fault
Responder = Callable[["RecordedRequest"], Outcome]


def message(text: str) -> dict[str, Any]:
    """An assistant message output item."""
    return {
        "type": "message",
        "id": f"msg_fake{next(_ids):06d}",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call(
    name: str, arguments: Mapping[str, Any] | str, call_id: str | None = None
) -> dict[str, Any]:
    """A function_call output item (arguments given as an object are encoded as JSON)."""
    encoded = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    number = next(_ids)
    return {
        "type": "function_call",
        "id": f"fc_fake{number:06d}",
        "status": "completed",
        "call_id": call_id or f"call_fake{number:06d}",
        "name": name,
        "arguments": encoded,
    }


def custom_tool_call(name: str, input: str, call_id: str | None = None) -> dict[str, Any]:
    """A custom (freeform) tool call, as the API calls a tool of type `custom`
    (Codex's `apply_patch` grammar tool)."""
    number = next(_ids)
    return {
        "type": "custom_tool_call",
        "id": f"ctc_fake{number:06d}",
        "status": "completed",
        "call_id": call_id or f"call_fake{number:06d}",
        "name": name,
        "input": input,
    }


def reply(
    *items: dict[str, Any] | str, usage: Mapping[str, int] | None = None, delay: float = 0.0
) -> Reply:
    """Strings become assistant messages."""
    return Reply(tuple(message(i) if isinstance(i, str) else i for i in items), usage, delay)


def api_error(
    status: int, error_type: str, message: str, *, code: str | None = None, retry: bool = False
) -> Fault:
    """An error in OpenAI's shape: {"error": {"message", "type", "param", "code"}}."""
    body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    headers = {} if retry else {"x-should-retry": "false"}
    return Fault("status", status, json.dumps(body).encode(), headers)


def dropped() -> Fault:
    return Fault("drop")


# --- what the server saw -----------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One request as received: `headers` have lower-case names, `body` is the parsed JSON."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    call: int = 0  # 1-based over POST /v1/responses attempts; 0 for other paths
    status: int | None = None
    #: The usage the fake answered with (its response.completed's), once answered.
    usage: dict[str, Any] | None = None
    received_at: float = field(default_factory=time.monotonic)

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def input(self) -> list[dict[str, Any]]:
        items = self.body.get("input") if isinstance(self.body, dict) else None
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []

    @property
    def tool_names(self) -> list[str]:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return [str(t.get("name", t.get("type", ""))) for t in tools or [] if isinstance(t, dict)]

    def user_texts(self) -> list[str]:
        """The text of every user message in the input, in order."""
        return [_text_of(i) for i in self.input if i.get("role") == "user"]

    @property
    def last_user_text(self) -> str:
        texts = self.user_texts()
        return texts[-1] if texts else ""

    @property
    def steps(self) -> int:
        """How many model turns (tool calls, assistant messages) follow the last user message."""
        items = self.input
        last_user = max((n for n, i in enumerate(items) if i.get("role") == "user"), default=-1)
        return sum(
            1
            for i in items[last_user + 1 :]
            if i.get("type") in ("function_call", "custom_tool_call")
            or (i.get("type") == "message" and i.get("role") == "assistant")
        )

    def outputs(self) -> list[str]:
        """What each tool call returned (function_call_output / custom_tool_call_output)."""
        found = []
        for item in self.input:
            if item.get("type") in ("function_call_output", "custom_tool_call_output"):
                output = item.get("output")
                found.append(output if isinstance(output, str) else json.dumps(output))
        return found


def _text_of(item: Mapping[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(part.get("text", ""))
        for part in content
        if isinstance(part, dict) and part.get("type") in ("input_text", "output_text")
    )


def conversation(*steps: Outcome) -> Responder:
    """Answer by step: step i answers a request with i model turns since the user spoke."""

    def respond(request: RecordedRequest) -> Outcome:
        if request.steps >= len(steps):
            raise LookupError(f"conversation has {len(steps)} steps; request is at {request.steps}")
        return steps[request.steps]

    return respond


# --- the server --------------------------------------------------------------------------


class FakeResponses(ScriptedFake[RecordedRequest, Outcome]):
    """The fake API server; a context manager. `url` is the base URL, ending in /v1; its
    `delay` is added to every answer of POST /v1/responses, which `calls` counts."""

    name = "fakeresp"

    def __init__(
        self,
        script: Sequence[Outcome] | Responder = (),
        *,
        api_key: str = "test-key",
        delay: float = 0.0,
        models: Sequence[str] = ("gpt-fake",),
    ) -> None:
        super().__init__(script, delay=delay)
        self.api_key = api_key
        self.models = tuple(models)
        self._cache: set[str] = set()

    @property
    def response_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.call]

    @property
    def url(self) -> str:
        return super().url + "/v1"

    # answering
    def answer(self, request: RecordedRequest) -> Outcome:
        """Decide the answer to one request (called concurrently from connection threads)."""
        self.record(request, call=request.path == RESPONSES)
        problem = self._reject(request)
        if problem is not None:
            self.errors.append(f"{request.method} {request.path}: rejected: {problem[1]}")
            return api_error(problem[0], "invalid_request_error", problem[1])
        if request.path == MODELS:
            return Reply(())
        return self.scripted(request)

    def _script_error(self, text: str) -> Fault:
        self.errors.append(text)
        return api_error(500, "server_error", f"fake_responses: {text}")

    def _reject(self, request: RecordedRequest) -> tuple[int, str] | None:
        """(status, message) of what the real API would refuse, or None."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or token.strip() != self.api_key:
            return 401, "Incorrect API key provided (expected Authorization: Bearer <key>)"
        if request.path != RESPONSES:
            return None
        body = request.body
        if not isinstance(body, dict):
            return 400, "the request body is not a JSON object"
        if not isinstance(body.get("model"), str) or not body["model"]:
            return 400, "model: a string is required"
        if not isinstance(body.get("input"), list | str) or not body["input"]:
            return 400, "input: a non-empty string or list is required"
        if "tools" in body and not isinstance(body["tools"], list):
            return 400, "tools: a list is required"
        if "stream" in body and not isinstance(body["stream"], bool):
            return 400, "stream: a boolean is required"
        return _pairing_problem(request.input)

    def render(self, outcome: Reply, request: RecordedRequest) -> dict[str, Any]:
        output = [dict(item) for item in outcome.output]
        usage = request.usage = self._usage(outcome, request, output)
        return {
            "id": f"resp_fake{next(_ids):06d}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": request.model,
            "output": output,
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
            "usage": usage,
        }

    def _usage(self, outcome: Reply, request: RecordedRequest, output: list[Any]) -> dict[str, Any]:
        if outcome.usage is not None:
            given = dict(outcome.usage)
            cached = given.pop("cached_tokens", 0)
            total_in, out = given.get("input_tokens", 0), given.get("output_tokens", 0)
        else:
            body = request.body
            segments = [body.get("instructions") or "", body.get("tools") or [], *request.input]
            running = hashlib.sha256(str(request.model).encode())
            total_in = cached = 0
            with self._lock:
                for segment in segments:
                    running.update(json.dumps(segment, sort_keys=True).encode())
                    total_in += _tokens(segment)
                    key = running.copy().hexdigest()
                    if key in self._cache:
                        cached = total_in
                    self._cache.add(key)
            out = _tokens(output)
        return {
            "input_tokens": total_in,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": total_in + out,
        }


def _tokens(value: Any) -> int:
    return max(1, len(json.dumps(value, separators=(",", ":"))) // 4)


def _pairing_problem(items: list[dict[str, Any]]) -> tuple[int, str] | None:
    """A tool output must answer a tool call made earlier in the input."""
    calls: set[str] = set()
    for index, item in enumerate(items):
        kind = item.get("type")
        if kind in ("function_call", "custom_tool_call"):
            calls.add(str(item.get("call_id")))
        elif (
            kind in ("function_call_output", "custom_tool_call_output")
            and str(item.get("call_id")) not in calls
        ):
            return 400, f"input[{index}]: No tool call found for output {item.get('call_id')}"
    return None


def stream_events(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A rendered response as the API's stream of events (each with its `type`), in order.

    Text and arguments arrive in several deltas, so a client that keeps only the last one is
    caught.
    """
    opening = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": opening},
        {"type": "response.in_progress", "response": opening},
    ]
    for index, item in enumerate(response["output"]):
        kind = item.get("type")
        if kind == "message":
            started = {**item, "status": "in_progress", "content": []}
        elif kind == "function_call":
            started = {**item, "status": "in_progress", "arguments": ""}
        elif kind == "custom_tool_call":
            started = {**item, "status": "in_progress", "input": ""}
        else:
            started = dict(item)
        events.append(
            {"type": "response.output_item.added", "output_index": index, "item": started}
        )
        where = {"item_id": item.get("id"), "output_index": index}
        if kind == "message":
            for part_index, part in enumerate(item.get("content") or []):
                at = {**where, "content_index": part_index}
                empty = {**part, "text": ""}
                events.append({"type": "response.content_part.added", **at, "part": empty})
                for piece in _pieces(part.get("text", "")):
                    events.append({"type": "response.output_text.delta", **at, "delta": piece})
                events.append({"type": "response.output_text.done", **at, "text": part["text"]})
                events.append({"type": "response.content_part.done", **at, "part": part})
        elif kind == "function_call":
            for piece in _pieces(item["arguments"]):
                events.append(
                    {"type": "response.function_call_arguments.delta", **where, "delta": piece}
                )
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    **where,
                    "arguments": item["arguments"],
                }
            )
        elif kind == "custom_tool_call":
            for piece in _pieces(item["input"]):
                events.append(
                    {"type": "response.custom_tool_call_input.delta", **where, "delta": piece}
                )
            events.append(
                {"type": "response.custom_tool_call_input.done", **where, "input": item["input"]}
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def _pieces(value: str, parts: int = 3) -> list[str]:
    size = max(1, -(-len(value) // parts))
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


class _Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"
    timeout = 30
    server: FakeHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self) -> RecordedRequest:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        return RecordedRequest(self.command, self.path.split("?")[0], headers, body)

    def do_POST(self) -> None:
        fake = self.server.fake
        request = self._record()
        if request.path != RESPONSES:
            fake.requests.append(request)
            fake.errors.append(f"POST {self.path}: not an endpoint of the fake")
            self._send(request, api_error(404, "invalid_request_error", f"Unknown {self.path}"))
            return
        outcome = fake.answer(request)
        wait = fake.delay + getattr(outcome, "delay", 0.0)
        if wait and fake._stopping.wait(wait):
            outcome = dropped()
        self._send(request, outcome)

    def do_GET(self) -> None:
        fake = self.server.fake
        request = self._record()
        if request.path != MODELS:
            fake.requests.append(request)
            fake.errors.append(f"GET {self.path}: not an endpoint of the fake")
            self._send(request, api_error(404, "invalid_request_error", f"Unknown {self.path}"))
            return
        outcome = fake.answer(request)
        if isinstance(outcome, Reply):
            data = [{"id": m, "object": "model", "owned_by": "fake"} for m in fake.models]
            self._json(request, 200, {"object": "list", "data": data})
        else:
            self._send(request, outcome)

    def _json(self, request: RecordedRequest, status: int, data: Any, headers: Any = None) -> None:
        body = json.dumps(data).encode() if not isinstance(data, bytes) else data
        request.status = status
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.send_header("x-request-id", f"req_fake{next(_ids):06d}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _send(self, request: RecordedRequest, outcome: Outcome) -> None:
        if isinstance(outcome, Fault):
            if outcome.kind == "drop":
                self.close_connection = True
                return
            self._json(request, outcome.status, outcome.body, outcome.headers)
            return
        response = self.server.fake.render(outcome, request)
        if not (isinstance(request.body, dict) and request.body.get("stream")):
            self._json(request, 200, response)
            return
        request.status = 200
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("x-request-id", f"req_fake{next(_ids):06d}")
        self.end_headers()
        for event in stream_events(response):
            chunk = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


FakeResponses.handler = _Handler


if __name__ == "__main__":  # python -m tests.fake_responses [DELAY]: "Done." to every call
    import sys

    with FakeResponses(
        lambda request: reply("Done."), delay=float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    ) as api:
        print(api.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
