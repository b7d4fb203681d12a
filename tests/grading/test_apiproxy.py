"""The API proxy's gate: only the CLI's calls go upstream, each counted, bodies capped, and a
key judged before any of the body is read. Requests are written byte for byte to the proxy's
Unix socket, as an agent in the sandbox could write them."""

from __future__ import annotations

import http.client
import json
import re
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anthropic
import pytest

from grading.evaluating import apiproxy
from grading.evaluating.apibudget import UsageMeter
from grading.evaluating.apiproxy import ApiProxy, Lease
from tests import fakeapi
from tests.fakeapi import FakeAnthropic, reply

MODEL = "claude-sonnet-5-5"
HELLO = {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}]}
HUGE = 600 * 1000 * 1000
T = TypeVar("T")


@dataclass
class Arrival:
    method: str
    target: str
    key: str | None


@pytest.fixture
def arrivals(fake_api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> list[Arrival]:
    """Every request that reached the fake API, whatever its method or path (the fake's own
    `requests` holds only the Messages calls it answers)."""
    seen: list[Arrival] = []
    parse = fakeapi._Handler.parse_request

    def recording(handler: Any) -> bool:
        parsed = parse(handler)
        if parsed:
            seen.append(Arrival(handler.command, handler.path, handler.headers.get("x-api-key")))
        return parsed

    monkeypatch.setattr(fakeapi._Handler, "parse_request", recording)
    return seen


@pytest.fixture
def proxy(fake_api: FakeAnthropic) -> Iterator[ApiProxy]:
    # A short folder: a Unix socket's path is limited to ~107 bytes.
    with (
        tempfile.TemporaryDirectory(prefix="apiproxy-") as folder,
        ApiProxy(
            api_key="real-key", upstream=fake_api.url, socket_path=Path(folder) / "api.sock"
        ) as running,
    ):
        yield running


@pytest.fixture
def lease(proxy: ApiProxy) -> Lease:
    return proxy.lease(max_calls=5, token_budget=10_000)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def error(self) -> str:
        return f"{self.body['error']['type']}: {self.body['error']['message']}"


def connect(proxy: ApiProxy) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(5)
    sock.connect(str(proxy.socket_path))
    return sock


def head(method: str, target: str, key: str, **headers: str | int) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "host: localhost", f"x-api-key: {key}"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def read_answer(sock: socket.socket) -> Answer:
    response = http.client.HTTPResponse(sock)
    response.begin()
    return Answer(response.status, dict(response.getheaders()), json.loads(response.read()))


def ask(proxy: ApiProxy, method: str, target: str, key: str, body: bytes = b"") -> Answer:
    with connect(proxy) as sock:
        sock.sendall(head(method, target, key, content_length=len(body)) + body)
        return read_answer(sock)


def hello(**extra: Any) -> bytes:
    return json.dumps({**HELLO, **extra}).encode()


# --- the allow-list -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("POST", "/v1/messages/batches"),
        ("GET", "/v1/messages/batches?beta=true"),
        ("POST", "/v1/messages/batches/msgbatch_01/cancel"),
        ("DELETE", "/v1/messages/batches/msgbatch_01"),
        ("POST", "/v1/messages/../v1/files"),
        ("POST", "/v1/%2e%2e/files"),
        ("POST", "/v1/messages/%2e%2e/files"),
        ("POST", "/v1/messages%2Fbatches"),
        ("POST", "/v1%2fmessages"),
        ("POST", "/v1/%6Dessages"),
        ("POST", "//v1/messages"),
        ("POST", "/v1//messages"),
        ("POST", "/v1/messages/"),
        ("POST", "/v1/./messages"),
        ("POST", "/v1\\messages"),
        ("POST", "/v1/messages\x00"),
        ("POST", "/v1/messages#batches"),
        ("POST", "http://api.anthropic.com/v1/messages"),
        ("GET", "/v1/messages"),
        ("GET", "/v1/models"),
        ("GET", "/v1/files?beta=true"),
    ],
)
def test_a_request_that_is_not_exactly_an_allowed_call_never_reaches_the_api(
    proxy: ApiProxy, lease: Lease, arrivals: list[Arrival], method: str, target: str
) -> None:
    answer = ask(proxy, method, target, lease.key, hello())

    assert answer.status == 404
    assert answer.error.startswith("not_found_error: evalsite proxy: ")
    assert answer.error.endswith("is not forwarded")
    assert answer.headers["x-should-retry"] == "false"
    assert arrivals == []
    assert (lease.tally.requests, lease.tally.calls, lease.tally.in_flight) == (1, 0, 0)


def test_the_clis_calls_are_forwarded_with_the_real_key_and_only_beta_in_the_query(
    fake_api: FakeAnthropic, proxy: ApiProxy, lease: Lease, arrivals: list[Arrival]
) -> None:
    fake_api.script = [reply("one"), reply("two")]

    first = ask(proxy, "POST", "/v1/messages?beta=true", lease.key, hello())
    second = ask(proxy, "POST", "/v1/messages?limit=5&beta=true&x=../y", lease.key, hello())
    counted = ask(proxy, "POST", "/v1/messages/count_tokens?beta=true", lease.key, hello())

    assert (first.status, second.status, counted.status) == (200, 200, 200)
    assert [(a.method, a.target, a.key) for a in arrivals] == [
        ("POST", "/v1/messages?beta=true", "real-key"),
        ("POST", "/v1/messages?beta=true", "real-key"),
        ("POST", "/v1/messages/count_tokens?beta=true", "real-key"),
    ]
    assert first.body["content"][0]["text"] == "one" and "input_tokens" in counted.body


def test_every_forwarded_call_counts_in_the_budget_and_a_token_count_spends_no_tokens(
    fake_api: FakeAnthropic, arrivals: list[Arrival]
) -> None:
    fake_api.script = [reply("one", usage={"input_tokens": 30, "output_tokens": 7})]
    with ApiProxy(api_key="real-key", upstream=fake_api.url) as proxy:
        lease = proxy.lease(max_calls=2, token_budget=10_000)
        client = anthropic.Anthropic(api_key=lease.key, base_url=proxy.url, max_retries=2)
        counted = client.beta.messages.count_tokens(model=MODEL, messages=HELLO["messages"])
        message = client.messages.create(**HELLO)
        with pytest.raises(anthropic.BadRequestError, match="budget of 2 API calls"):
            client.messages.create(**HELLO)

    assert counted.input_tokens > 0 and message.content[0].text == "one"
    assert [a.target for a in arrivals] == ["/v1/messages/count_tokens", "/v1/messages"]
    tally = lease.tally
    assert (tally.calls, tally.token_counts, tally.refused, tally.in_flight) == (1, 1, 1, 0)
    assert tally.tokens == 37


@pytest.mark.parametrize("stream", [False, True], ids=["with-a-length", "streamed-chunked"])
def test_a_call_is_counted_before_the_client_can_tell_its_answer_is_whole(
    fake_api: FakeAnthropic,
    proxy: ApiProxy,
    lease: Lease,
    monkeypatch: pytest.MonkeyPatch,
    stream: bool,
) -> None:
    # A CLI may exit the moment it has its answer, and the harness then reads the tally: the
    # count must not trail the answer's last byte. A slow count makes any such lag show.
    fake_api.script = [reply("counted", usage={"input_tokens": 11, "output_tokens": 3})]
    settle = ApiProxy._settle

    def slow_settle(self: ApiProxy, lease: Lease, **outcome: Any) -> None:
        time.sleep(0.3)
        settle(self, lease, **outcome)

    monkeypatch.setattr(ApiProxy, "_settle", slow_settle)
    with connect(proxy) as sock:
        body = hello(stream=True) if stream else hello()
        sock.sendall(head("POST", "/v1/messages", lease.key, content_length=len(body)) + body)
        response = http.client.HTTPResponse(sock)
        response.begin()
        answer = response.read()
        tally = (lease.tally.calls, lease.tally.tokens, lease.tally.in_flight)

    assert response.status == 200 and (b"message_stop" if stream else b"counted") in answer
    assert response.getheader("transfer-encoding") == ("chunked" if stream else None)
    assert tally == (1, 14, 0)


def test_settled_waits_for_a_call_still_being_relayed_and_gives_up_at_its_timeout(
    proxy: ApiProxy, lease: Lease
) -> None:
    assert lease.admit() is None  # a call in flight, as a relaying thread holds it
    started = time.monotonic()
    assert proxy.settled(lease, timeout=0.2) is False
    assert 0.2 <= time.monotonic() - started < 2

    ender = threading.Timer(
        0.2,
        lambda: proxy._settle(lease, spends_tokens=True, status=200, usage={}, seconds=0.0),
    )
    ender.start()
    assert proxy.settled(lease, timeout=5) is True
    ender.join()
    assert (lease.tally.calls, lease.tally.in_flight) == (1, 0)


def test_a_budget_refusal_reads_past_the_body_so_the_client_sees_it_on_a_live_connection(
    fake_api: FakeAnthropic, proxy: ApiProxy, arrivals: list[Arrival]
) -> None:
    fake_api.script = [reply("one")]
    lease = proxy.lease(max_calls=1, token_budget=10_000)
    # Larger than the socket's buffers: unread, it would leave the client stuck writing.
    long = hello(system="x" * (4 * 1024 * 1024))
    with connect(proxy) as sock:
        answers = []
        for body in (hello(), long, hello()):
            sock.sendall(head("POST", "/v1/messages", lease.key, content_length=len(body)))
            sock.sendall(body)
            answers.append(read_answer(sock))

    assert [a.status for a in answers] == [200, 400, 400]
    assert "budget of 1 API calls" in answers[1].error
    assert len(arrivals) == 1


# --- keys and bodies ----------------------------------------------------------------------


def test_an_unknown_key_is_refused_without_inviting_or_reading_the_body(
    proxy: ApiProxy, lease: Lease, arrivals: list[Arrival]
) -> None:
    with connect(proxy) as sock:
        sock.sendall(
            head(
                "POST",
                "/v1/messages",
                "evalsite-run-guess",
                content_length=9,
                expect="100-continue",
            )
        )
        answer = read_answer(sock)  # a 100 Continue first would fail to parse as JSON here
        closed = sock.recv(1) == b""

    assert answer.status == 401 and "unknown or expired key" in answer.error
    assert answer.headers["connection"] == "close" and closed
    assert arrivals == [] and lease.tally.requests == 0


@pytest.mark.parametrize(
    ("key_is_good", "framing", "status"),
    [
        (False, {"content_length": HUGE}, 401),
        (True, {"content_length": HUGE}, 413),
        (True, {"transfer_encoding": "chunked"}, 411),
        (True, {}, 411),
    ],
    ids=["bad-key", "over-the-cap", "chunked", "no-length"],
)
def test_a_huge_body_is_refused_from_its_headers_fast_and_in_bounded_memory(
    proxy: ApiProxy,
    lease: Lease,
    arrivals: list[Arrival],
    key_is_good: bool,
    framing: dict[str, str | int],
    status: int,
) -> None:
    key = lease.key if key_is_good else "evalsite-run-guess"
    started = time.monotonic()
    with connect(proxy) as sock:
        growth, answer = peak_memory_growth(
            lambda: send_huge(sock, head("POST", "/v1/messages", key, **framing))
        )

    assert answer.status == status and answer.headers["x-should-retry"] == "false"
    assert growth < 40 * 1024 * 1024
    assert time.monotonic() - started < 5
    assert arrivals == []
    assert (lease.tally.calls, lease.tally.in_flight) == (0, 0)


def test_a_body_at_the_cap_is_forwarded_and_one_byte_more_is_refused_unread(
    fake_api: FakeAnthropic,
    proxy: ApiProxy,
    lease: Lease,
    arrivals: list[Arrival],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_api.script = [reply("fits")]
    body = hello()
    monkeypatch.setattr(apiproxy, "MAX_BODY", len(body))

    fits = ask(proxy, "POST", "/v1/messages", lease.key, body)
    over = ask(proxy, "POST", "/v1/messages", lease.key, body + b" ")

    assert fits.status == 200
    assert over.status == 413 and over.error.startswith("request_too_large: evalsite proxy:")
    assert len(arrivals) == 1
    assert (lease.tally.requests, lease.tally.calls) == (2, 1)


def test_reading_an_answers_usage_holds_a_bounded_part_of_it() -> None:
    meter = UsageMeter("text/event-stream")
    endless_line = b"x" * (1024 * 1024)

    def relay() -> None:
        for _ in range(48):
            meter.feed(endless_line)
        meter.feed(b'\ndata: {"type":"message_delta","usage":{"output_tokens":9}}\n\n')

    growth, _ = peak_memory_growth(relay)

    assert growth < 8 * 1024 * 1024
    assert meter.usage() == {"output_tokens": 9}  # what follows a skipped line is read


def send_huge(sock: socket.socket, request_head: bytes) -> Answer:
    """Send the head, then up to HUGE bytes of body from a thread until the proxy closes;
    the proxy's answer."""

    def pour() -> None:
        chunk = b"0" * (1024 * 1024)
        try:
            sock.sendall(request_head)
            for _ in range(HUGE // len(chunk)):
                sock.sendall(chunk)
        except OSError:
            pass  # the proxy closed the connection, as it should

    sender = threading.Thread(target=pour, daemon=True)
    sender.start()
    answer = read_answer(sock)
    sender.join(timeout=5)
    assert not sender.is_alive(), "the proxy kept reading the body"
    return answer


def peak_memory_growth(action: Callable[[], T]) -> tuple[int, T]:
    """How far the process's peak RSS rose above its RSS while `action` ran, and its result."""
    try:
        # "5" resets the kernel's high-water mark (VmHWM) to the current RSS.
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pytest.skip("this kernel cannot reset a process's peak RSS")
    before = _status_kib("VmRSS")
    result = action()
    return (_status_kib("VmHWM") - before) * 1024, result


def _status_kib(field: str) -> int:
    match = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    assert match, field
    return int(match.group(1))
