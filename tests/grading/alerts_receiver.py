"""A local incoming-webhook receiver for the alert tests: an http.server thread on 127.0.0.1
that answers each POST with the next status of a script (the last one repeating), or waits
past the client's timeout for "slow"."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self, *answers: int | str):
        self.answers = list(answers) or [200]
        self.received: list[dict[str, Any]] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                answer = (
                    receiver.answers.pop(0) if len(receiver.answers) > 1 else receiver.answers[0]
                )
                receiver.paths.append(self.path)
                receiver.received.append(json.loads(body))
                if answer == "slow":
                    time.sleep(1.0)
                    answer = 200
                self.send_response(int(answer))
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str = "/services/T0/B0/s3cr3t-token-value") -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
