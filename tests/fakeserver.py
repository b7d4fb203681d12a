"""What the fake APIs share (fakeapi.py's Messages, fake_responses.py, fake_chat.py,
fake_gemini.py): a server on 127.0.0.1 with one thread per connection, each tracked so that
stop() can cut it and join it, and a script of answers — a queue, or a callable — whose end or
failure is a bug in the test, answered as an error and kept in `errors`.

A fake subclasses `ScriptedFake`, names its request handler and thread, and says what a
broken script answers (`_script_error`); its `answer(request)` checks the request, then asks
`scripted(request)` for the script's next answer.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Generic, TypeVar

Request = TypeVar("Request")
Outcome = TypeVar("Outcome")


class FakeHTTPServer(HTTPServer):
    """One thread per connection, each tracked so that stop() can cut it and join it."""

    request_queue_size = 128  # 16+ clients connecting at once must not overflow the backlog

    def __init__(self, fake: Any, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self.fake = fake
        self.connections: dict[threading.Thread, socket.socket] = {}
        self._name = name
        self._numbers = itertools.count(1)
        super().__init__(("127.0.0.1", 0), handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name=f"{self._name}-conn-{next(self._numbers)}",
            daemon=True,
        )
        with self.fake._lock:
            self.connections[thread] = request
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except OSError:
            pass  # the client went away (a timeout, or a dropped connection we made)
        finally:
            self.shutdown_request(request)
            with self.fake._lock:
                self.connections.pop(threading.current_thread(), None)

    def close_connections(self) -> list[threading.Thread]:
        with self.fake._lock:
            connections = list(self.connections.items())
        for _thread, sock in connections:
            with contextlib.suppress(OSError):  # wakes a handler waiting for the next request
                sock.shutdown(socket.SHUT_RDWR)
        return [thread for thread, _sock in connections]


class ScriptedFake(ABC, Generic[Request, Outcome]):
    """A fake API server with a script; a context manager. `url` is its base address."""

    #: The request handler (its `server.fake` is this object) and the threads' name.
    handler: type[BaseHTTPRequestHandler]
    name = "fake"

    def __init__(
        self, script: Sequence[Outcome] | Callable[[Request], Outcome] = (), *, delay: float = 0.0
    ) -> None:
        #: Seconds added to every answer of a call that the model would take time over.
        self.delay = delay
        self.requests: list[Request] = []
        self.errors: list[str] = []
        self._queue: deque[Outcome] = deque()
        self._responder: Callable[[Request], Outcome] | None = None
        self.script = script
        self._calls = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: FakeHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def script(self) -> Sequence[Outcome] | Callable[[Request], Outcome]:
        return self._responder or tuple(self._queue)

    @script.setter
    def script(self, script: Sequence[Outcome] | Callable[[Request], Outcome]) -> None:
        if callable(script):
            self._responder, self._queue = script, deque()
        else:
            self._responder, self._queue = None, deque(script)

    @property
    def calls(self) -> int:
        """How many calls (of the kind the script answers) arrived."""
        return self._calls

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake API first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Any:
        self._server = FakeHTTPServer(self, self.handler, self.name)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=self.name
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        threads = self._server.close_connections()
        self._server.server_close()
        for thread in [*threads, self._thread]:
            if thread is not None:
                thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # answering
    def record(self, request: Request, *, call: bool) -> None:
        """Keep the request; a call the script answers gets the next call number."""
        with self._lock:
            self.requests.append(request)
            if call:
                self._calls += 1
                request.call = self._calls  # type: ignore[attr-defined]

    def scripted(self, request: Request) -> Outcome:
        """The script's answer to a call (the queue's next, or the responder's)."""
        call = getattr(request, "call", None)
        if self._responder is None:
            with self._lock:
                if self._queue:
                    return self._queue.popleft()
            return self._script_error(f"call {call}: script exhausted")
        try:
            return self._responder(request)
        except Exception as error:  # a broken script: say so instead of hanging the client
            return self._script_error(f"call {call}: script failed: {error!r}")

    @abstractmethod
    def _script_error(self, message: str) -> Outcome:
        """The answer to a broken script, kept in `errors`."""
