"""The page benchmark's server and clients: gunicorn, keep-alive clients, first views.

A separate module so that bench/pages_bench.py reads as what it measures and reports.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
#: How long gunicorn may take to answer its first request, and any one request.
START_TIMEOUT = 60.0
REQUEST_TIMEOUT = 60.0


# --- the server ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def gunicorn(env: dict[str, str], log: Path, *, probe: str) -> Iterator[int]:
    """gunicorn serving evalsite on 127.0.0.1 until the block ends; yields its port.

    It is serving once `probe` (a static file) answers 200.
    """
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "evalsite.wsgi"]
    command += ["-w", "2", "--threads", "4", "-b", f"127.0.0.1:{port}"]
    with log.open("wb") as out:
        # A session of its own, so the workers can be stopped with the master by its id.
        proc = subprocess.Popen(
            command, cwd=PROJECT, env=env, stdout=out, stderr=out, start_new_session=True
        )
    try:
        wait_until_serving(proc, port, log, probe)
        yield port
    finally:
        stop(proc)


def wait_until_serving(proc: subprocess.Popen, port: int, log: Path, probe: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"gunicorn exited ({proc.returncode}):\n{tail(log)}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", probe)
            if conn.getresponse().status == 200:
                conn.close()
                return
            conn.close()
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"gunicorn did not serve {probe} in {START_TIMEOUT:g} s:\n{tail(log)}")


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM the master (it stops its workers), then SIGKILL its process group if need be."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # any worker the master left behind


def tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


# --- the clients ---------------------------------------------------------------------------


@dataclass
class Round:
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    size: int = 0
    seconds: float = 0.0


def hammer(port: int, path: str, *, clients: int, requests: int) -> Round:
    """`clients` threads, each with one keep-alive connection, GET `path` `requests` times."""
    result = Round()
    lock = threading.Lock()
    barrier = threading.Barrier(clients + 1)

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
        mine: list[float] = []
        try:
            barrier.wait(timeout=REQUEST_TIMEOUT)
            for _ in range(requests):
                start = time.perf_counter()
                try:
                    conn.request("GET", path)
                    response = conn.getresponse()
                    body = response.read()
                except (OSError, http.client.HTTPException) as exc:
                    conn.close()  # http.client reconnects on the next request
                    with lock:
                        result.errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                elapsed = (time.perf_counter() - start) * 1000
                if response.status != 200:
                    with lock:
                        result.errors.append(f"HTTP {response.status}")
                    continue
                mine.append(elapsed)
                result.size = len(body)
                if response.will_close:
                    conn.close()
        finally:
            conn.close()
            with lock:
                result.latencies_ms.extend(mine)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait(timeout=REQUEST_TIMEOUT)
    start = time.perf_counter()
    deadline = time.monotonic() + REQUEST_TIMEOUT * requests
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    result.seconds = time.perf_counter() - start
    if any(thread.is_alive() for thread in threads):
        result.errors.append("clients still waiting at the deadline")
    return result


def new_generation(database_url: str) -> None:
    """Start a new dashboard generation, as an import or a review does: every cached page
    region is rendered afresh on its next view (runs/generation.py)."""
    token = uuid.uuid4().hex
    if database_url.startswith("sqlite:///"):
        path = database_url.removeprefix("sqlite:///")
        with contextlib.closing(sqlite3.connect(path, timeout=30)) as db, db:
            db.execute("UPDATE runs_generation SET token = ? WHERE id = 1", (token,))
        return
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as db:
        db.execute("UPDATE runs_generation SET token = %s WHERE id = 1", (token,))


def first_views(port: int, path: str, database_url: str, views: int) -> Round:
    """`views` requests of `path` by one client, each the first of a new generation."""
    result = Round()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
    try:
        for _ in range(views):
            new_generation(database_url)
            start = time.perf_counter()
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read()
            if response.status != 200:
                result.errors.append(f"HTTP {response.status}")
                continue
            result.latencies_ms.append((time.perf_counter() - start) * 1000)
            result.size = len(body)
    finally:
        conn.close()
    return result
