"""Folder to first view, the import bench's (d): how soon an importing iteration can be seen.

While gunicorn (bench/serving.py) serves a fresh database, `importworkspace` starts; the
database is polled until the iteration is committed and its page is fetched at once.
Folder to first view is the import's start to that page's last byte, set beside the peer's
aggregate + review (bench/peer_skill_creator.py) measured just before it. The import's own
end (a large iteration's search index is built after the commit) is reported beside.
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

from bench.peer_skill_creator import aggregate_like_skill_creator, review_like_skill_creator
from bench.reporting import verdict
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


@dataclass
class Peer:
    """skill-creator's own tools over the same iteration (bench/peer_skill_creator.py)."""

    aggregate: float
    review: float
    #: Their CPU time (this process's, user + system).
    cpu: float
    page_bytes: int

    @property
    def total(self) -> float:
        return self.aggregate + self.review


def measure_peer(workspace: Path, base: Path) -> Peer:
    """The peer's aggregate and review over the workspace, one after the other."""
    cpu = time.process_time()
    aggregate = aggregate_like_skill_creator(workspace, base / "aggregated.json")
    review, page = review_like_skill_creator(workspace, base / "review.html")
    (base / "review.html").unlink(missing_ok=True)
    return Peer(aggregate, review, time.process_time() - cpu, page)


def report_first_view(rounds: list[tuple[Peer, FirstView]]) -> bool:
    """Print folder -> first view beside the peer's aggregate + review measured just before
    it (the round with the lowest ratio); whether it is below the peer's."""
    peer, best = min(rounds, key=lambda r: r[1].folder_to_first_view / r[0].total)
    ratio = best.folder_to_first_view / peer.total
    exact = best.documents == best.runs and best.pending == 0
    of = f", best of {len(rounds)} rounds" if len(rounds) > 1 else ""
    print(
        f"\nfolder -> first view, beside the peer (skill-creator) just before it{of}:\n"
        f"  peer: aggregate_benchmark.py's work (json.load of every grading.json and "
        f"timing.json, statistics, benchmark.json written) {peer.aggregate:.2f} s + "
        f"generate_review.py --static's work (every run's outputs and grading in one page of "
        f"{peer.page_bytes / 2**20:.0f} MB) {peer.review:.2f} s = {peer.total:.2f} s "
        f"({peer.cpu:.2f} s CPU)\n"
        f"  evalsite: import committed after {best.committed:.2f} s ({best.committed_cpu:.2f} s "
        f"CPU, start-up included), then the iteration page's first view "
        f"{best.view * 1000:.0f} ms ({best.size / 1024:.0f} KB) = "
        f"{best.folder_to_first_view:.2f} s\n"
        f"  the import's process ended after {best.finished:.2f} s (search index built after "
        f"the commit): {best.documents:,} documents for {best.runs:,} runs, "
        f"{best.pending} iteration(s) still pending{'' if exact else '  !! not exact'}"
    )
    ok = ratio < 1 and exact
    cpu_ratio = best.committed_cpu / peer.cpu
    print(
        f"  folder -> first view / peer aggregate + review = {ratio:.2f}x "
        f"(CPU to the commit / peer CPU {cpu_ratio:.2f}x)   target < 1x  {verdict(ok)}"
    )
    return ok
