"""A fake Anthropic Messages API on 127.0.0.1, for driving the real `anthropic` client in tests.

    with FakeAnthropic([reply(tool_use("Read", {"file_path": "a.txt"})), reply("Done.")]) as api:
        client = api.client(max_retries=2)          # or ANTHROPIC_BASE_URL=api.url
        ...
        assert api.requests[0].forced_tool is None

A script is a queue of `Reply`/`Fault` items, or a callable `respond(request) -> Reply | Fault`
(see `conversation` and `route` for ones that stay deterministic under concurrency and
retries). Faults can also be scheduled by call number: `fail_first`, `fail_call`, `fail_next`.
Calls are numbered from 1 over `POST /v1/messages` attempts, retries included.

Requests need credentials: anthropic 2.x sends `api_key` as `authorization: Bearer …`, not as
`x-api-key`; either is accepted. A request with `"stream": true` gets the same reply as
server-sent events, as the real API streams it (message_start, ping, content_block_start /
text_delta / input_json_delta / content_block_stop per block, message_delta with the stop reason
and output tokens, message_stop), so a script serves the SDK and the Claude Code CLI alike.
Usage (tokens and prompt-cache reads/writes) is simulated unless a reply gives its own.
`python -m tests.fakeapi [DELAY]` serves `auto_reply` for a benchmark in another process.

Anything that is a bug in the test rather than in the client (a script that ran out, a
responder that raised, a request the real API would reject) answers a non-retryable error and
is appended to `api.errors`; the `fake_api` fixture fails the test if any remain.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any, Literal

import pytest

from tests.fakeserver import FakeHTTPServer

if TYPE_CHECKING:
    import anthropic

FORCED_TOOL = "<tool named by tool_choice>"
_ids = itertools.count(1)


# --- what the server answers -------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A successful Messages API answer; `usage=None` simulates tokens and prompt caching."""

    content: tuple[dict[str, Any], ...]
    stop_reason: str
    usage: Mapping[str, int] | None = None
    model: str | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class Fault:
    """A failed answer: an HTTP error, a slow answer, a dropped/reset connection, bad JSON."""

    kind: Literal["status", "slow", "drop", "reset", "malformed"]
    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    seconds: float = 0.0


Outcome = Reply | Fault
Responder = Callable[["RecordedRequest"], Outcome]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, input: Mapping[str, Any], id: str | None = None) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": id or f"toolu_fake{next(_ids):06d}",
        "name": name,
        "input": dict(input),
    }


def reply(
    *blocks: dict[str, Any] | str,
    stop_reason: str | None = None,
    usage: Mapping[str, int] | None = None,
    model: str | None = None,
    delay: float = 0.0,
) -> Reply:
    """Strings become text blocks; stop_reason defaults to tool_use when a tool is called."""
    content = tuple(text(b) if isinstance(b, str) else b for b in blocks)
    if stop_reason is None:
        calls_tool = any(b["type"] == "tool_use" for b in content)
        stop_reason = "tool_use" if calls_tool else "end_turn"
    return Reply(content, stop_reason, usage, model, delay)


def judge_verdict(
    passed: bool, evidence: str, confidence: float, *, tool: str = FORCED_TOOL
) -> Reply:
    """The forced tool call a judge answers with; by default it calls whatever tool_choice names."""
    verdict = {"passed": passed, "evidence": evidence, "confidence": confidence}
    return reply(tool_use(tool, verdict))


def api_error(
    status: int,
    error_type: str,
    message: str,
    *,
    headers: Mapping[str, str] | None = None,
    retry_after: float | None = None,
    retry_after_ms: float | None = None,
) -> Fault:
    """An error in the API's own shape: {"type":"error","error":{"type":…,"message":…}}."""
    all_headers = dict(headers or {})
    if retry_after is not None:
        all_headers["retry-after"] = f"{retry_after:g}"
    if retry_after_ms is not None:
        all_headers["retry-after-ms"] = f"{retry_after_ms:g}"
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return Fault("status", status, json.dumps(body).encode(), all_headers)


def rate_limited(retry_after: float | None = None, *, retry_after_ms: float | None = None) -> Fault:
    return api_error(
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your rate limit.",
        retry_after=retry_after,
        retry_after_ms=retry_after_ms,
    )


def overloaded(retry_after: float | None = None, *, retry_after_ms: float | None = None) -> Fault:
    return api_error(
        529,
        "overloaded_error",
        "Overloaded",
        retry_after=retry_after,
        retry_after_ms=retry_after_ms,
    )


def server_error(status: int = 500, *, retry_after_ms: float | None = None) -> Fault:
    return api_error(status, "api_error", "Internal server error", retry_after_ms=retry_after_ms)


def slow(seconds: float) -> Fault:
    """Hold the answer for `seconds`, then answer a plain text reply (the script is not used)."""
    return Fault("slow", seconds=seconds)


def dropped() -> Fault:
    """Close the connection without answering (the client sees a clean EOF)."""
    return Fault("drop")


def reset() -> Fault:
    """Abort the connection with a TCP reset."""
    return Fault("reset")


def malformed_json(status: int = 200) -> Fault:
    return Fault("malformed", status, b'{"id": "msg_fake", "type": "mess')


# --- what the server saw -----------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One request as received: `headers` have lower-case names, `body` is the parsed JSON."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    call: int = 0  # 1-based over POST /v1/messages attempts; 0 for other paths
    status: int | None = None  # what the fake answered; None for a dropped connection
    received_at: float = field(default_factory=time.monotonic)

    @property
    def retry_count(self) -> int:
        return int(self.headers.get("x-stainless-retry-count", "0"))

    @property
    def model(self) -> str | None:
        return self.body.get("model")

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages") or []

    @property
    def system_text(self) -> str:
        system = self.body.get("system") or ""
        return system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system)

    @property
    def tool_names(self) -> list[str]:
        return [tool.get("name", "") for tool in self.body.get("tools") or []]

    @property
    def forced_tool(self) -> str | None:
        choice = self.body.get("tool_choice") or {}
        return choice.get("name") if choice.get("type") == "tool" else None

    @property
    def first_user_text(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return _text_of(users[0]) if users else ""

    @property
    def assistant_turns(self) -> int:
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """The tool_result blocks of the last message."""
        last = self.messages[-1:] or [{}]
        return [b for b in _blocks(last[0]) if b.get("type") == "tool_result"]


def _blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in _blocks(message) if b.get("type") == "text")


# --- responders that stay deterministic under concurrency --------------------------------


def conversation(*steps: Outcome) -> Responder:
    """Answer by turn: step i answers a request holding i assistant messages (retries agree)."""

    def respond(request: RecordedRequest) -> Outcome:
        turn = request.assistant_turns
        if turn >= len(steps):
            raise LookupError(f"conversation has {len(steps)} steps; request is at turn {turn}")
        return steps[turn]

    return respond


def route(key: Callable[[RecordedRequest], str], table: Mapping[str, Responder]) -> Responder:
    """Send each request to the responder its key names, e.g. by `first_user_text`."""

    def respond(request: RecordedRequest) -> Outcome:
        return table[key(request)](request)

    return respond


def auto_reply(request: RecordedRequest) -> Outcome:
    """A passing verdict for a forced tool call, else a short text reply."""
    if request.forced_tool:
        return judge_verdict(True, "fakeapi auto reply", 1.0)
    return reply("Done.")


# --- the server --------------------------------------------------------------------------


class FakeAnthropic:
    """The fake API server; a context manager. `url` is the base URL to give the client."""

    def __init__(
        self,
        script: Sequence[Outcome] | Responder = (),
        *,
        delay: float = 0.0,
        faults: Mapping[int, Fault] | None = None,
        strict: bool = True,
    ) -> None:
        self.delay = delay  # added to every answer of POST /v1/messages
        self.strict = strict  # reject requests the real API would reject
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []
        self._faults: dict[int, Fault] = dict(faults or {})
        self._queue: deque[Outcome] = deque()
        self._responder: Responder | None = None
        self.script = script
        self._calls = 0
        self.waiting = 0  # answers being delayed right now
        self.peak_waiting = 0  # the most answers ever delayed at once (concurrency, not timing)
        self._cache: set[str] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: FakeHTTPServer | None = None
        self._serve_thread: threading.Thread | None = None

    # scripting
    @property
    def script(self) -> Sequence[Outcome] | Responder:
        return self._responder or tuple(self._queue)

    @script.setter
    def script(self, script: Sequence[Outcome] | Responder) -> None:
        if callable(script):
            self._responder, self._queue = script, deque()
        else:
            self._responder, self._queue = None, deque(script)

    def enqueue(self, *items: Outcome) -> None:
        self._queue.extend(items)

    def fail_call(self, call: int, fault: Fault) -> None:
        self._faults[call] = fault

    def fail_first(self, n: int, fault: Fault) -> None:
        for call in range(1, n + 1):
            self._faults[call] = fault

    def fail_next(self, n: int, fault: Fault) -> None:
        for call in range(self._calls + 1, self._calls + n + 1):
            self._faults[call] = fault

    @property
    def calls(self) -> int:
        """How many POST /v1/messages attempts arrived."""
        return self._calls

    @property
    def message_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.call]

    # lifecycle
    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake API first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def client(self, **kwargs: Any) -> anthropic.Anthropic:
        import anthropic

        return anthropic.Anthropic(**{"api_key": "test-key", "base_url": self.url, **kwargs})

    def start(self) -> FakeAnthropic:
        self._server = FakeHTTPServer(self, _Handler, "fakeapi")
        self._serve_thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fakeapi-serve"
        )
        self._serve_thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut open connections and wait for every thread the server started."""
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        threads = self._server.close_connections()
        self._server.server_close()
        for thread in [*threads, self._serve_thread]:
            if thread is not None:
                thread.join(timeout=5)
        alive = [t.name for t in threads if t.is_alive()]
        self._server = None
        if alive:
            raise RuntimeError(f"fakeapi threads did not stop: {alive}")

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # answering
    def answer(self, request: RecordedRequest) -> Outcome:
        """Decide the answer to one request (called concurrently from connection threads)."""
        with self._lock:
            self.requests.append(request)
            if request.path != "/v1/messages/count_tokens":
                self._calls += 1
                request.call = self._calls
        if request.call and request.call in self._faults:
            return self._faults[request.call]
        problem = _reject(request, strict=self.strict)
        if problem is not None:
            self.errors.append(f"call {request.call}: rejected: {problem.body.decode()}")
            return problem
        if request.path == "/v1/messages/count_tokens":
            return Reply((), "", {"input_tokens": sum(_token_segments(request.body)[1])})
        if self._responder is None:
            with self._lock:
                if self._queue:
                    return self._queue.popleft()
            return self._script_error(f"call {request.call}: script exhausted")
        try:
            return self._responder(request)
        except Exception as error:  # a broken script: say so instead of hanging the client
            return self._script_error(f"call {request.call}: script failed: {error!r}")

    def _script_error(self, message: str) -> Fault:
        self.errors.append(message)
        return api_error(
            500, "api_error", f"fakeapi: {message}", headers={"x-should-retry": "false"}
        )

    def render(self, outcome: Reply, request: RecordedRequest) -> dict[str, Any]:
        if request.path == "/v1/messages/count_tokens":
            return dict(outcome.usage or {})
        content = [self._resolve_forced_tool(block, request) for block in outcome.content]
        return {
            "id": f"msg_fake{next(_ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": outcome.model or request.model,
            "content": content,
            "stop_reason": outcome.stop_reason,
            "stop_sequence": None,
            "usage": self._usage(outcome, request, content),
        }

    def _resolve_forced_tool(
        self, block: dict[str, Any], request: RecordedRequest
    ) -> dict[str, Any]:
        if block.get("name") != FORCED_TOOL:
            return block
        names = request.tool_names
        name = request.forced_tool or (names[0] if len(names) == 1 else None)
        if name is None:
            self.errors.append(f"call {request.call}: judge_verdict() but no tool is forced")
            name = "no_forced_tool"
        return {**block, "name": name}

    def _usage(
        self, outcome: Reply, request: RecordedRequest, content: list[Any]
    ) -> dict[str, int]:
        usage = {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        if outcome.usage is not None:
            return {**usage, **outcome.usage}
        # Prompt caching as the API does it: a breakpoint's prefix (tools, system, messages in
        # that order) is read when an earlier request wrote it, else written.
        breakpoints, sizes = _token_segments(request.body)
        total = sum(sizes)
        with self._lock:
            cached = 0
            for end in breakpoints:
                prefix = _prefix_key(request.body, end, request.model)
                if prefix in self._cache:
                    cached = sum(sizes[:end])
                self._cache.add(prefix)
            written = sum(sizes[: breakpoints[-1]]) - cached if breakpoints else 0
        usage["cache_read_input_tokens"] = cached
        usage["cache_creation_input_tokens"] = written
        usage["input_tokens"] = total - cached - written
        usage["output_tokens"] = _tokens(content)
        return usage


def _tokens(value: Any) -> int:
    return max(1, len(json.dumps(value, separators=(",", ":"))) // 4)


def _segments(body: Mapping[str, Any]) -> list[Any]:
    """The prompt in caching order: tools, then system blocks, then message blocks."""
    system = body.get("system") or []
    segments: list[Any] = list(body.get("tools") or [])
    segments += [system] if isinstance(system, str) else list(system)
    for message in body.get("messages") or []:
        content = message.get("content")
        segments += [content] if isinstance(content, str) else list(content or [])
    return segments


def _token_segments(body: Mapping[str, Any]) -> tuple[list[int], list[int]]:
    """(ends of the prefixes marked with cache_control, token estimate per segment)."""
    segments = _segments(body)
    ends = [i + 1 for i, s in enumerate(segments) if isinstance(s, dict) and "cache_control" in s]
    if body.get("cache_control") and segments:
        ends.append(len(segments))  # automatic caching: everything up to the last block
    return ends, [_tokens(s) for s in segments]


def _prefix_key(body: Mapping[str, Any], end: int, model: str | None) -> str:
    prefix = json.dumps([model, _segments(body)[:end]], sort_keys=True)
    return hashlib.sha256(prefix.encode()).hexdigest()


def _reject(request: RecordedRequest, *, strict: bool) -> Fault | None:
    """The 400/401 the real API would answer, or None."""

    def invalid(message: str) -> Fault:
        return api_error(400, "invalid_request_error", message)

    if not (request.headers.get("x-api-key") or request.headers.get("authorization")):
        return api_error(
            401, "authentication_error", "x-api-key or authorization header is required"
        )
    body = request.body
    if not isinstance(body, dict):
        return invalid("request body is not a JSON object")
    if request.path == "/v1/messages/count_tokens":
        return None
    for name, kind in (("model", str), ("max_tokens", int), ("messages", list)):
        if not isinstance(body.get(name), kind):
            return invalid(f"{name}: Field required")
    if not body["messages"]:
        return invalid("messages: at least one message is required")
    problem = _tool_pairing_problem(body["messages"]) if strict else None
    marked = sum(1 for s in _segments(body) if isinstance(s, dict) and "cache_control" in s)
    if strict and marked > 4:
        problem = f"A maximum of 4 blocks with cache_control may be provided. Found {marked}."
    return None if problem is None else invalid(problem)


def _tool_pairing_problem(messages: list[dict[str, Any]]) -> str | None:
    previous_ids: set[str] = set()
    for i, message in enumerate(messages):
        blocks = _blocks(message)
        results = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
        if stray := sorted(str(r) for r in results - previous_ids):
            return (
                f"messages.{i}: unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{', '.join(stray)}. Each `tool_result` block must have a corresponding "
                "`tool_use` block in the previous message."
            )
        if missing := sorted(previous_ids - results):
            return (
                f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}."
            )
        uses = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        previous_ids = {str(u) for u in uses} if message.get("role") == "assistant" else set()
    if previous_ids:
        return f"messages.{len(messages) - 1}: `tool_use` ids were found without `tool_result`."
    return None


class _Handler(BaseHTTPRequestHandler):
    # Without TCP_NODELAY each answer waits ~40 ms on the client's delayed ACK, which would
    # show up as time evalsite spends per call.
    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects
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
        request = RecordedRequest("POST", self.path.split("?")[0], headers, body)
        if request.path not in ("/v1/messages", "/v1/messages/count_tokens"):
            self._send(request, api_error(404, "not_found_error", f"Not found: {self.path}"))
            return
        outcome = fake.answer(request)
        wait = (fake.delay if request.call else 0.0) + getattr(outcome, "delay", 0.0)
        if isinstance(outcome, Fault) and outcome.kind == "slow":
            wait += outcome.seconds
            outcome = reply("fakeapi: slow reply")
        if wait:
            with fake._lock:
                fake.waiting += 1
                fake.peak_waiting = max(fake.peak_waiting, fake.waiting)
            try:
                if fake._stopping.wait(wait):
                    outcome = dropped()
            finally:
                with fake._lock:
                    fake.waiting -= 1
        self._send(request, outcome)

    def do_GET(self) -> None:
        self._send(
            RecordedRequest("GET", self.path, {}, None),
            api_error(404, "not_found_error", f"Not found: {self.path}"),
        )

    def _send(self, request: RecordedRequest, outcome: Outcome) -> None:
        if isinstance(outcome, Reply):
            message = self.server.fake.render(outcome, request)
            if request.call and isinstance(request.body, dict) and request.body.get("stream"):
                self._stream(request, message)
                return
            status, headers = 200, {}
            body = json.dumps(message).encode()
        elif outcome.kind in ("drop", "reset"):
            self.close_connection = True
            if outcome.kind == "reset":  # linger 0: close() sends RST instead of FIN
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.connection.close()
            return
        else:
            status, headers, body = outcome.status, outcome.headers, outcome.body
        request.status = status
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.send_header("request-id", f"req_fake{next(_ids):06d}")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, request: RecordedRequest, message: dict[str, Any]) -> None:
        """The reply as server-sent events, one HTTP chunk each, as the real API sends them."""
        request.status = 200
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", f"req_fake{next(_ids):06d}")
        self.end_headers()
        for name, data in stream_events(message):
            event = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")


def stream_events(message: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A rendered message as the API's stream of (event name, data), in order.

    Text and JSON arrive in several deltas, so a client that keeps only the last one, or
    parses a tool's input before its block stops, is caught.
    """
    usage = dict(message["usage"])
    opening_usage = {**usage, "output_tokens": 1}
    started = {**message, "content": [], "stop_reason": None, "usage": opening_usage}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": started}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(message["content"]):
        kind = block.get("type")
        if kind == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": part} for part in _pieces(block["text"])]
        elif kind == "tool_use":
            opening = {**block, "input": {}}
            encoded = json.dumps(block.get("input") or {})
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(encoded)]
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block.get("signature", "")})
        else:  # a block without deltas arrives whole
            opening, deltas = dict(block), []
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        events += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    # Today's API repeats the (cumulative) input counts beside the final output count.
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _pieces(value: str, parts: int = 3) -> list[str]:
    """`value` cut into up to `parts` consecutive pieces (one, possibly empty, if short)."""
    size = max(1, -(-len(value) // parts))
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


# --- pytest ------------------------------------------------------------------------------


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropic]:
    """A running fake with an empty script; fails the test on script errors."""
    with FakeAnthropic() as api:
        yield api
    if api.errors:
        pytest.fail("fake Anthropic API: " + "; ".join(api.errors))


@pytest.fixture
def fake_api_env(fake_api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> FakeAnthropic:
    """The fake, with ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY pointing the SDK at it."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    return fake_api


if __name__ == "__main__":  # python -m tests.fakeapi [DELAY]: serve auto replies until ^C
    import sys

    with FakeAnthropic(auto_reply, delay=float(sys.argv[1]) if len(sys.argv) > 1 else 0.0) as api:
        print(api.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
