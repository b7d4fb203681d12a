"""A fake Gemini API (generativelanguage.googleapis.com) on 127.0.0.1, for the Gemini CLI.

    script = [reply(function_call("read_file", {"file_path": "a.txt"})), reply("Done.")]
    with FakeGemini(script) as api:
        env["GOOGLE_GEMINI_BASE_URL"] = api.url      # and GEMINI_API_KEY=test-key
        ...
        assert api.requests[0].model == "gemini-2.5-pro"

It answers what the CLI (@google/genai underneath) calls: `POST
/v1beta/models/{model}:streamGenerateContent?alt=sse` (server-sent events, each `data:` a
GenerateContentResponse: `candidates[0].content.parts` of `{text}` or `{functionCall}`, the
last with a `finishReason`; `usageMetadata` on every one, its counts cumulative), `POST
…:generateContent` (the same answer as one JSON body) and `POST …:countTokens`.

A script is a queue of `Reply`/`Fault` items or a callable `respond(request)`; `delay`
seconds are added to every generate call. Requests need a key (`x-goog-api-key`, or the
`key` query parameter the REST API also takes). Anything that is a bug in the test rather
than in the client (an exhausted script, a responder that raised, a request the real API
would reject: no key, a malformed body, function calls without their responses) answers an
error in Google's shape and is appended to `api.errors`; the `fake_gemini` fixture fails
the test if any remain.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.fakeserver import FakeHTTPServer, ScriptedFake

# --- what the server answers -------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A successful answer; `usage=None` simulates the token counts."""

    parts: tuple[dict[str, Any], ...]
    finish_reason: str = "STOP"
    usage: Mapping[str, int] | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class Fault:
    """A failed answer: an HTTP error in Google's shape, or a dropped connection."""

    kind: Literal["status", "drop"]
    status: int = 200
    body: bytes = b""


Outcome = Reply | Fault
Responder = Callable[["GeminiRequest"], Outcome]

#: Google's canonical status names for the HTTP errors a test answers with.
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def function_call(name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": dict(args)}}


def reply(
    *parts: dict[str, Any] | str,
    finish_reason: str = "STOP",
    usage: Mapping[str, int] | None = None,
    delay: float = 0.0,
) -> Reply:
    """Strings become text parts."""
    content = tuple(text(p) if isinstance(p, str) else p for p in parts)
    return Reply(content, finish_reason, usage, delay)


def api_error(status: int, message: str) -> Fault:
    """{"error": {"code", "message", "status"}}, as Google's APIs answer errors."""
    error = {"code": status, "message": message, "status": STATUS_NAMES.get(status, "UNKNOWN")}
    return Fault("status", status, json.dumps({"error": error}).encode())


def dropped() -> Fault:
    """Close the connection without answering."""
    return Fault("drop")


# --- what the server saw -----------------------------------------------------------------

#: /v1beta/models/{model}:{action}, the model one plain path segment.
_ROUTE = re.compile(r"/v1beta/models/([A-Za-z0-9][A-Za-z0-9._-]*):([A-Za-z]+)")
GENERATE = frozenset({"streamGenerateContent", "generateContent"})
ACTIONS = GENERATE | {"countTokens"}


@dataclass
class GeminiRequest:
    """One request as received: `headers` have lower-case names, `body` is the parsed JSON."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    model: str = ""
    action: str = ""
    call: int = 0  # 1-based over generate calls; 0 for countTokens and refused paths
    status: int | None = None
    received_at: float = field(default_factory=time.monotonic)

    @property
    def key(self) -> str | None:
        return self.headers.get("x-goog-api-key") or self.query.get("key")

    @property
    def contents(self) -> list[dict[str, Any]]:
        contents = self.body.get("contents") if isinstance(self.body, dict) else None
        return contents if isinstance(contents, list) else []

    @property
    def system_text(self) -> str:
        system = (self.body or {}).get("systemInstruction") or {}
        if isinstance(system, str):
            return system
        return "\n".join(str(p.get("text", "")) for p in system.get("parts") or [])

    @property
    def tool_names(self) -> list[str]:
        return [
            str(declaration.get("name", ""))
            for tool in (self.body or {}).get("tools") or []
            for declaration in tool.get("functionDeclarations") or []
        ]

    @property
    def model_turns(self) -> int:
        """How many model contents the conversation holds (the turn this request is at)."""
        return sum(1 for c in self.contents if c.get("role") == "model")

    @property
    def user_texts(self) -> list[str]:
        return [
            str(p["text"])
            for c in self.contents
            if c.get("role") == "user"
            for p in c.get("parts") or []
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]

    @property
    def function_responses(self) -> list[dict[str, Any]]:
        """The functionResponse parts of the last content."""
        last = (self.contents or [{}])[-1]
        return [p["functionResponse"] for p in last.get("parts") or [] if "functionResponse" in p]


# --- the server --------------------------------------------------------------------------


class FakeGemini(ScriptedFake[GeminiRequest, Outcome]):
    """The fake API server; a context manager. `url` is the base URL to give the client.
    Its `delay` is added to every generate call's answer; `calls` counts generate calls
    (countTokens not counted)."""

    name = "fakegemini"

    @property
    def generate_requests(self) -> list[GeminiRequest]:
        return [r for r in self.requests if r.call]

    def answer(self, request: GeminiRequest) -> Outcome:
        """Decide the answer to one request (called concurrently from connection threads)."""
        self.record(request, call=request.action in GENERATE)
        problem = rejection(request)
        if problem is not None:
            self.errors.append(f"{request.method} {request.path}: rejected: {problem}")
            status = 401 if problem.startswith("no API key") else 400
            return api_error(status, problem)
        if request.action == "countTokens":
            return Reply((), usage={"totalTokens": _prompt_tokens(request.body)})
        return self.scripted(request)

    def _script_error(self, message: str) -> Fault:
        self.errors.append(message)
        # A 400: the CLI retries 429s and 5xx, and a broken script will not mend.
        return api_error(400, f"fake_gemini: {message}")


def rejection(request: GeminiRequest) -> str | None:
    """What the real API would refuse this request for, or None."""
    if not request.key:
        return "no API key (x-goog-api-key header or key parameter)"
    if request.action == "streamGenerateContent" and request.query.get("alt") != "sse":
        return "streamGenerateContent is served as server-sent events only with alt=sse"
    body = request.body
    if not isinstance(body, dict):
        return "the request body is not a JSON object"
    if request.action == "countTokens" and "generateContentRequest" in body:
        body = body["generateContentRequest"]
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return "contents is not specified"
    pending: list[str] = []
    for i, content in enumerate(contents):
        if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
            return f"contents[{i}].parts must be a list"
        role = content.get("role")
        if role not in ("user", "model"):
            return f"contents[{i}].role must be user or model, not {role!r}"
        parts = content["parts"]
        if not parts:
            return f"contents[{i}] must contain at least one part"
        answered = [p["functionResponse"].get("name") for p in parts if "functionResponse" in p]
        if sorted(map(str, answered)) != sorted(pending):
            return (
                f"contents[{i}]: the number of function response parts ({len(answered)}) must "
                f"equal the number of function call parts of the previous turn ({len(pending)})"
            )
        calls = [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]
        pending = [str(c.get("name")) for c in calls] if role == "model" else []
    if pending:
        return "the last model turn's function calls have no responses"
    return None


def _prompt_tokens(body: Any) -> int:
    return max(1, len(json.dumps(body)) // 4)


def usage_metadata(reply_: Reply, request: GeminiRequest) -> dict[str, int]:
    """The answer's usageMetadata: the reply's own, else simulated from the sizes."""
    if reply_.usage is not None:
        usage = dict(reply_.usage)
    else:
        usage = {
            "promptTokenCount": _prompt_tokens(request.body),
            "candidatesTokenCount": max(1, len(json.dumps(reply_.parts)) // 4),
        }
    usage.setdefault(
        "totalTokenCount",
        usage.get("promptTokenCount", 0)
        + usage.get("candidatesTokenCount", 0)
        + usage.get("thoughtsTokenCount", 0),
    )
    return usage


def stream_chunks(reply_: Reply, usage: Mapping[str, int]) -> list[dict[str, Any]]:
    """The answer as the API streams it: text in a few pieces, each function call whole, the
    finish reason on the last chunk; usageMetadata on every chunk, output counts growing."""
    pieces: list[dict[str, Any]] = []
    for part in reply_.parts:
        if isinstance(part.get("text"), str) and len(part["text"]) > 1:
            value = part["text"]
            size = -(-len(value) // 3)
            pieces += [{**part, "text": value[i : i + size]} for i in range(0, len(value), size)]
        else:
            pieces.append(part)
    pieces = pieces or [text("")]
    chunks = []
    for index, part in enumerate(pieces, start=1):
        last = index == len(pieces)
        partial = {
            **usage,
            "candidatesTokenCount": usage.get("candidatesTokenCount", 0) * index // len(pieces),
        }
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
        if last:
            candidate["finishReason"] = reply_.finish_reason
        chunks.append(
            {
                "candidates": [candidate],
                "usageMetadata": dict(usage) if last else partial,
                "modelVersion": "fake-gemini",
            }
        )
    return chunks


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
        target = urlsplit(self.path)
        headers = {name.lower(): value for name, value in self.headers.items()}
        query = dict(parse_qsl(target.query, keep_blank_values=True))
        request = GeminiRequest("POST", target.path, query, headers, body)
        route = _ROUTE.fullmatch(target.path)
        if route is None or route.group(2) not in ACTIONS:
            fake.requests.append(request)
            fake.errors.append(f"POST {self.path}: not an API route")
            self._send(request, api_error(404, f"fake_gemini: no route {target.path}"))
            return
        request.model, request.action = route.groups()
        outcome = fake.answer(request)
        wait = (fake.delay if request.call else 0.0) + getattr(outcome, "delay", 0.0)
        if wait and fake._stopping.wait(wait):
            outcome = dropped()
        self._send(request, outcome)

    def do_GET(self) -> None:
        fake = self.server.fake
        request = GeminiRequest("GET", self.path, {}, {}, None)
        fake.requests.append(request)
        fake.errors.append(f"GET {self.path}: not an API route")
        self._send(request, api_error(404, f"fake_gemini: no route {self.path}"))

    def _send(self, request: GeminiRequest, outcome: Outcome) -> None:
        if isinstance(outcome, Fault) and outcome.kind == "drop":
            self.close_connection = True
            return
        if isinstance(outcome, Fault):
            self._whole(request, outcome.status, outcome.body)
            return
        if request.action == "countTokens":
            self._whole(request, 200, json.dumps(dict(outcome.usage or {})).encode())
            return
        usage = usage_metadata(outcome, request)
        chunks = stream_chunks(outcome, usage)
        if request.action == "generateContent":
            last = chunks[-1]["candidates"][0]
            candidate = {**last, "content": {"role": "model", "parts": list(outcome.parts)}}
            whole = {**chunks[-1], "candidates": [candidate]}
            self._whole(request, 200, json.dumps(whole).encode())
            return
        request.status = 200
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for chunk in chunks:
            event = f"data: {json.dumps(chunk)}\r\n\r\n".encode()
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def _whole(self, request: GeminiRequest, status: int, body: bytes) -> None:
        request.status = status
        self.send_response(status)
        self.send_header("content-type", "application/json; charset=UTF-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


FakeGemini.handler = _Handler


# --- pytest ------------------------------------------------------------------------------


@pytest.fixture(name="fake_gemini")
def fake_gemini_fixture() -> Iterator[FakeGemini]:
    """`fake_gemini`: a running fake with an empty script; fails the test on rejected
    requests. A test module imports this function to have the fixture."""
    with FakeGemini() as api:
        yield api
    if api.errors:
        pytest.fail("fake Gemini API: " + "; ".join(api.errors))
