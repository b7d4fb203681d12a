"""Folder to first view: how soon after an import starts its iteration's page can be seen.

A gunicorn (bench/serving.py) already serves the freshly migrated, empty database, as a
running evalsite would; then `manage.py importworkspace WS` starts, and this process polls
the database until the iteration is committed (another connection sees it) and at once
GETs the iteration's page: nothing of it is cached, the import has just started a new
generation. "Folder to first view" is from the import's start to that page's last byte.
The import may go on after its commit (a large iteration's search index is built then):
its own end, and whether the index is then complete, are reported beside.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.serving import REQUEST_TIMEOUT, gunicorn, hammer

#: How often the database is asked whether the iteration is there yet.
POLL_SECONDS = 0.01
#: Answered 200 by an empty database: the servers' warm-up and readiness probe.
PROBE = "/"


@dataclass
class FirstView:
    #: From the import's start until the iteration was visible to another connection, and
    #: the CPU time the import's process had used by then (user + system).
    committed: float
    committed_cpu: float
    #: The GET of the iteration page right then, and the page's size.
    view: float
    size: int
    #: From the import's start until its process exited (the search index built).
    finished: float
    #: After the import: documents and runs, and iterations still marked pending.
    documents: int
    runs: int
    pending: int

    @property
    def folder_to_first_view(self) -> float:
        return self.committed + self.view


@contextlib.contextmanager
def _reader(url: str) -> Iterator[Callable[[str], list[tuple[Any, ...]]]]:
    """One connection for the polling: a query function over it."""
    if url.startswith("sqlite:"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30)
        try:
            yield lambda sql: conn.execute(sql).fetchall()
        finally:
            conn.close()
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as pg:
        yield lambda sql: pg.execute(sql).fetchall()


def measure_first_view(
    manage: Path, workspace: Path, *, url: str, env: dict[str, str], log: Path
) -> FirstView:
    """Import `workspace` into the database at `url` (migrated, empty) while gunicorn serves
    it; the timings above."""
    env = {**env, "ALLOWED_HOSTS": "127.0.0.1", "EVALSITE_PUBLIC_READ": "1"}
    # The pages name their static files by the manifest collectstatic writes (as a
    # deployment does, into <project>/staticfiles, git-ignored); untimed.
    subprocess.run(
        [sys.executable, str(manage), "collectstatic", "--noinput", "-v0", "--skip-checks"],
        env=env,
        check=True,
    )
    with gunicorn(env, log, probe=PROBE) as port, _reader(url) as query:
        hammer(port, PROBE, clients=2, requests=3)  # both workers up and warm
        command = [sys.executable, str(manage), "importworkspace", "--skip-checks", str(workspace)]
        start = time.perf_counter()
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        sql = "SELECT s.name, i.number FROM runs_iteration i JOIN runs_skill s ON s.id = i.skill_id"
        while not (found := query(sql)):
            if proc.poll() is not None:
                raise SystemExit(f"the import ended with nothing committed:\n{_output(proc)}")
            time.sleep(POLL_SECONDS)
        committed = time.perf_counter() - start
        committed_cpu = _cpu_seconds(proc.pid)
        name, number = found[0]
        view_start = time.perf_counter()
        size = _get(port, f"/skills/{name}/iterations/{number}/")
        view = time.perf_counter() - view_start
        output = _output(proc)
        finished = time.perf_counter() - start
        if proc.returncode:
            raise SystemExit(f"the import failed (exit {proc.returncode}):\n{output}")
        counts = query(
            "SELECT (SELECT count(*) FROM search_searchdocument), (SELECT count(*) FROM runs_run),"
            " (SELECT count(*) FROM search_pendingindex)"
        )[0]
    return FirstView(committed, committed_cpu, view, size, finished, *counts)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process so far (Linux; NaN elsewhere)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("nan")
    fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _get(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    if response.status != 200:
        raise SystemExit(f"GET {path}: HTTP {response.status}")
    return len(body)


def _output(proc: subprocess.Popen) -> str:
    out, _ = proc.communicate()
    return out.decode(errors="replace").strip()
