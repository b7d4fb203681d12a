"""A local forwarding endpoint between an agent CLI and the Anthropic API.

The agent's process never holds the API key: it is given a per-run placeholder key and the
address of this proxy, which checks the placeholder, swaps in the real key, forwards the
request to the real API (settings' ANTHROPIC_BASE_URL, else https://api.anthropic.com) and
streams the answer back unchanged. What it forwards, how large, and for whom is apigate.py's: an
allow-list of the CLI's calls, a body cap, a key judged from the headers before any of the
body is read. Because every call passes through here, this is also where a run's budget
holds: once its `max_calls` calls are answered (or its tokens spent) the next call is
refused with a 400 that says so and tells the client not to retry. A call the API failed
(a 429, a 5xx, a dropped connection) costs nothing and is the client's to retry, as the
messages harness counts only answered calls.

It listens on a Unix socket (a file that can be bind-mounted into a sandbox whose network is
unshared) or, without one, on 127.0.0.1 at a free port.
"""

from __future__ import annotations

import contextlib
import http.client
import secrets
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .apibudget import Lease, Tally
from .apigate import MAX_BODY, declared_length
from .apiwire import MESSAGES, Meter, Wire

__all__ = ["ApiProxy", "Lease", "Tally"]

DEFAULT_UPSTREAM = "https://api.anthropic.com"
PLACEHOLDER_PREFIX = "evalsite-run-"
# Hop-by-hop headers (RFC 9110 §7.6.1), the credentials, and the ones set here.
# fmt: off
_NOT_FORWARDED = frozenset((
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "transfer-encoding", "upgrade", "host", "content-length", "x-api-key", "authorization",
    "accept-encoding", "expect", "x-goog-api-key",
))
# fmt: on
_CHUNK = 64 * 1024


class ApiProxy:
    """The forwarding endpoint; a context manager. Thread-safe: runs lease keys concurrently."""

    def __init__(
        self,
        *,
        api_key: str,
        upstream: str | None = None,
        socket_path: Path | None = None,
        timeout: float = 600.0,
        wire: Wire = MESSAGES,
    ) -> None:
        self.api_key = api_key
        #: The API this proxy speaks (apiwire.py): Anthropic's Messages unless told.
        self.wire = wire
        self.upstream = urlsplit((upstream or DEFAULT_UPSTREAM).rstrip("/"))
        if self.upstream.scheme not in ("http", "https") or not self.upstream.hostname:
            raise ValueError(f"the API's base URL {upstream!r} is not an http(s) URL")
        self.socket_path = socket_path
        self.timeout = timeout
        self._leases: dict[str, Lease] = {}
        # A condition, so that settled() can wait for a lease's calls to end.
        self._lock = threading.Condition()
        self._server: _UnixServer | _TcpServer | None = None
        self._thread: threading.Thread | None = None

    # keys
    def lease(self, *, max_calls: int, token_budget: int) -> Lease:
        """A fresh placeholder key for one run, valid here only, until released."""
        lease = Lease(PLACEHOLDER_PREFIX + secrets.token_urlsafe(18), max_calls, token_budget)
        with self._lock:
            self._leases[lease.key] = lease
        return lease

    def release(self, lease: Lease) -> None:
        with self._lock:
            self._leases.pop(lease.key, None)

    def _find(self, key: str | None) -> Lease | None:
        with self._lock:
            return self._leases.get(key or "")

    def _count_refused(self, lease: Lease) -> None:
        """Count a request refused before the budget was asked: it costs nothing."""
        with self._lock:
            lease.tally.requests += 1

    def _admit(self, lease: Lease) -> str | None:
        with self._lock:
            return lease.admit()

    def _settle(self, lease: Lease, **outcome: Any) -> None:
        with self._lock:
            lease.settle(**outcome)
            self._lock.notify_all()

    def settled(self, lease: Lease, timeout: float = 1.0) -> bool:
        """Wait (at most `timeout` seconds) until none of the lease's calls is in flight.

        A CLI may exit as soon as it has read a streamed answer's last event, while the
        thread relaying it has yet to read the upstream's end and count it; a harness reads
        the tally after this. The wait is short: a call abandoned mid-answer (a CLI killed at
        its time limit) may hold on for as long as the API takes, and is not waited for.
        """
        with self._lock:
            return self._lock.wait_for(lambda: lease.tally.in_flight == 0, timeout)

    # lifecycle
    @property
    def url(self) -> str:
        """The TCP address to give a client (for a proxy without a socket path)."""
        assert isinstance(self._server, _TcpServer), "a TCP proxy, started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> ApiProxy:
        if self.socket_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
            self._server = _UnixServer(str(self.socket_path), _Handler)
        else:
            self._server = _TcpServer(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            # stop() waits for the loop to notice: a short poll keeps a run's end prompt.
            kwargs={"poll_interval": 0.01},
            name="apiproxy",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.close_connections()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.socket_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
        self._server = None

    def __enter__(self) -> ApiProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def connection(self) -> http.client.HTTPConnection:
        """A new connection to the upstream API."""
        host = self.upstream.hostname or ""
        if self.upstream.scheme == "https":
            return http.client.HTTPSConnection(
                host,
                self.upstream.port or 443,
                timeout=self.timeout,
                context=ssl.create_default_context(),
            )
        return http.client.HTTPConnection(host, self.upstream.port or 80, timeout=self.timeout)


class _Connections:
    """Client connections tracked so that stop() can cut the ones still open."""

    proxy: ApiProxy
    daemon_threads = True
    block_on_close = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._open: set[Any] = set()
        self._open_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        try:
            super().process_request_thread(request, client_address)  # type: ignore[misc]
        finally:
            with self._open_lock:
                self._open.discard(request)

    def close_connections(self) -> None:
        with self._open_lock:
            open_now = list(self._open)
        for request in open_now:
            with contextlib.suppress(OSError):
                request.shutdown(socket.SHUT_RDWR)


class _TcpServer(_Connections, socketserver.ThreadingMixIn, HTTPServer):
    pass


class _UnixServer(_Connections, socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the CLI reuses its connections
    server: _UnixServer | _TcpServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def address_string(self) -> str:
        return "unix" if isinstance(self.client_address, str | bytes) else super().address_string()

    def setup(self) -> None:
        # Without TCP_NODELAY each answer waits on the client's delayed ACK; a Unix socket
        # has no such option.
        self.disable_nagle_algorithm = isinstance(self.server, _TcpServer)
        super().setup()
        self._upstream: http.client.HTTPConnection | None = None

    def finish(self) -> None:
        if self._upstream is not None:
            self._upstream.close()
        super().finish()

    def handle_expect_100(self) -> bool:
        # The body is invited only once the headers pass (in _forward), not on arrival.
        return True

    def do_POST(self) -> None:
        self._forward()

    # Other methods are refused in the API's shape, not with the stdlib's HTML 501.
    do_GET = do_PUT = do_PATCH = do_DELETE = do_POST

    def _forward(self) -> None:
        proxy = self.server.proxy
        wire = proxy.wire
        # The request line's own target: parse_request rewrites a leading "//" in self.path.
        parts = self.requestline.split()
        asked = parts[1] if len(parts) > 1 else ""
        lease = proxy._find(wire.key_of(self.headers, asked))
        if lease is None:
            # Judged from the headers alone: a stranger's body is never read, however large.
            self._refuse(401, "authentication_error", "unknown or expired key")
            return
        target = wire.forwarded_target(self.command, asked)
        length = declared_length(self.headers)
        if target is None or length is None or length > MAX_BODY:
            proxy._count_refused(lease)
            if target is None:
                message = f"{self.command} {asked[:200]} is not forwarded"
                self._refuse(404, "not_found_error", message)
            elif length is None:
                message = "a request body needs one plain Content-Length (chunked is not taken)"
                self._refuse(411, "invalid_request_error", message)
            else:
                message = f"the request body is over the {MAX_BODY >> 20} MiB limit"
                self._refuse(413, "request_too_large", message)
            return
        refusal = proxy._admit(lease)
        if refusal:
            # The run's normal end: the body (within the cap) is discarded so the CLI reads
            # the refusal instead of a broken pipe, and the connection stays usable.
            self._refuse(400, "invalid_request_error", refusal, discard=length)
            return
        started = time.monotonic()
        meter: Meter = wire.meter("")
        response = None
        settled = False

        def settle() -> None:
            # Once, and before the answer's last bytes reach the client: a client that has
            # its whole answer (and a harness reading the tally after the CLI exits) finds
            # the call counted.
            nonlocal settled
            if settled:
                return
            settled = True
            status = response.status if response is not None and meter.complete else 0
            proxy._settle(
                lease,
                spends_tokens=wire.spends_tokens(target),
                status=status,
                usage=meter.usage(),
                seconds=time.monotonic() - started,
            )

        try:
            if self._expects_continue():
                super().handle_expect_100()
            # One buffer of the declared length (at most the cap), filled as the body arrives.
            body = bytearray(length)
            if not self._fill(memoryview(body)):
                self.close_connection = True  # the client went away mid-body
                return
            headers = {
                k: v
                for k, v in self.headers.items()
                if k.lower() not in _NOT_FORWARDED and k.lower() not in wire.credential_headers
            }
            headers.update(wire.upstream_headers(proxy.api_key))
            # Uncompressed, so the usage in the answer can be read as it streams past.
            headers["accept-encoding"] = "identity"
            response = self._send_upstream(proxy.upstream.path + target, body, headers)
            meter = wire.meter(response.getheader("content-type") or "")
            self._relay(response, meter, settle)
        except (OSError, http.client.HTTPException) as exc:
            self._drop_upstream()
            if response is not None:
                raise  # the client went away mid-answer: nobody to tell
            message = f"the API is unreachable ({exc})"
            self._answer(502, "api_error", message, retry=True)
        finally:
            settle()

    def _fill(self, view: memoryview) -> bool:
        """Fill `view` with the body's next bytes; False when the client went away first."""
        while view:
            try:
                read = self.rfile.readinto(view)
            except OSError:
                read = 0
            if not read:
                return False
            view = view[read:]
        return True

    def _send_upstream(
        self, target: str, body: bytearray, headers: dict[str, str]
    ) -> http.client.HTTPResponse:
        """The upstream's answer, over this client connection's own upstream connection.

        A kept-alive connection the API has meanwhile closed fails at once; that one attempt
        is repeated on a fresh connection (as urllib3 does), anything else is the caller's.
        """
        reused = self._upstream is not None
        if self._upstream is None:
            self._upstream = self.server.proxy.connection()
        try:
            self._upstream.request("POST", target, body=body, headers=headers)
            return self._upstream.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            self._drop_upstream()
            if not reused:
                raise
            return self._send_upstream(target, body, headers)

    def _drop_upstream(self) -> None:
        """Forget the upstream connection: after a failure it cannot carry another request."""
        if self._upstream is not None:
            self._upstream.close()
            self._upstream = None

    def _relay(
        self, response: http.client.HTTPResponse, meter: Meter, settle: Callable[[], None]
    ) -> None:
        """Relay the upstream's answer as it arrives. `settle` is called once the upstream has
        sent all of it, before the client can tell the answer is whole (its last declared
        byte, or the chunked terminator), so a client never holds an uncounted answer."""
        self.send_response_only(response.status, response.reason)
        declared = response.getheader("content-length")
        for name, value in response.getheaders():
            if name.lower() not in _NOT_FORWARDED:
                self.send_header(name, value)
        if declared is not None:
            self.send_header("content-length", declared)
        else:
            self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        chunked = declared is None
        remaining = None if chunked else int(declared)
        held = b""  # the declared answer's last bytes, written once the call is settled
        completed = False
        try:
            while chunk := response.read1(_CHUNK):
                meter.feed(chunk)
                if remaining is not None:
                    remaining -= len(chunk)
                    if remaining <= 0:
                        held += chunk
                        continue
                self._write_chunk(chunk, chunked=chunked)
            # read1 does not mark a response with a length read to its end as done; until
            # it is, the connection refuses the next request.
            response.close()
            meter.complete = True
            settle()
            if held:
                self._write_chunk(held, chunked=False)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            completed = True
        finally:
            if not completed:
                # Half a response relayed: neither connection can carry another request.
                self.close_connection = True
            if not completed or response.will_close:
                self._drop_upstream()

    def _write_chunk(self, chunk: bytes, *, chunked: bool) -> None:
        if chunked:
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        else:
            self.wfile.write(chunk)
        self.wfile.flush()

    def _refuse(self, status: int, kind: str, message: str, *, discard: int | None = None) -> None:
        """Answer a request that is not forwarded. Its body is not read and the connection
        is closed, unless `discard` bytes of it are to be read past (never kept) to keep the
        connection; not when the client waits for a 100 Continue to send them at all."""
        if discard is None or self._expects_continue():
            self.close_connection = True
        else:
            self.close_connection = not self._skip(discard)
        self._answer(status, kind, message)

    def _skip(self, length: int) -> bool:
        """Read past `length` bytes of body, a chunk at a time; False if the client left."""
        scratch = memoryview(bytearray(min(length, _CHUNK)))
        while length > 0 and self._fill(scratch[: min(length, _CHUNK)]):
            length -= min(length, _CHUNK)
        return length == 0

    def _expects_continue(self) -> bool:
        return (self.headers.get("expect") or "").lower() == "100-continue"

    def _answer(self, status: int, kind: str, message: str, *, retry: bool = False) -> None:
        """An error of the proxy's own, in the API's shape."""
        body = self.server.proxy.wire.error_body(status, kind, f"evalsite proxy: {message}")
        self.send_response_only(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        if self.close_connection:
            self.send_header("connection", "close")
        # Stainless clients (the CLI's included) honour this: a refusal is final, an
        # unreachable API worth another try.
        self.send_header("x-should-retry", "true" if retry else "false")
        self.end_headers()
        self.wfile.write(body)
