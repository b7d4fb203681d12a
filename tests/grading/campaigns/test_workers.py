"""`runevals --queue` as deployed: a real redis-server, real `celery -A evalsite worker`
processes with workspaces of their own, a shared run store, one database (a SQLite file, or
PostgreSQL when DATABASE_URL names it), and the fake Messages API.

Every process is started as an operator would start it, with only the documented variables;
the test reads the database directly to see what the workers did.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dj_database_url
import pytest
from django.conf import settings

from tests.fakeapi import FakeAnthropic
from tests.grading.test_runevals import good_agent, make_skill

MANAGE = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
#: Seconds for a worker's heartbeat and for the broker to deliver a lost worker's runs again.
HEARTBEAT, VISIBILITY = 0.2, 2


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(check: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return found


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    folder = tmp_path_factory.mktemp("redis")
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(folder)],
        stdout=subprocess.DEVNULL,
    )

    def listening() -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_for(listening, "redis-server", timeout=10)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)


class Database:
    """The deployment's database, read by the test with the driver, not the ORM."""

    def __init__(self, url: str):
        self.url = url

    def rows(self, sql: str) -> list[tuple]:
        config = dj_database_url.parse(self.url)
        if config["ENGINE"].endswith("sqlite3"):
            with sqlite3.connect(config["NAME"], timeout=10) as connection:
                return connection.execute(sql).fetchall()
        import psycopg

        with psycopg.connect(self.url.replace("postgres://", "postgresql://", 1)) as connection:
            return connection.execute(sql).fetchall()


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """A new database for this module, migrated as the README's Deploy section does."""
    given = os.environ.get("DATABASE_URL", "")
    if not given.startswith(("postgres://", "postgresql://")):
        url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'queue.sqlite3'}"
        dropped = None
    else:
        import psycopg

        config = dj_database_url.parse(given)
        name = f"evalsite_queue_{secrets.token_hex(4)}"
        admin = given.replace("postgres://", "postgresql://", 1)
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        parts = urllib.parse.urlsplit(given)
        url = urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))
        dropped = (admin, name, config)
    env = {"PATH": os.environ["PATH"], "EVALSITE_ENV_FILE": "", "SECRET_KEY": "queue-tests"}
    done = subprocess.run(
        [*MANAGE, "migrate", "--noinput", "-v0"],
        env={**env, "DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    try:
        yield Database(url)
    finally:
        if dropped is not None:
            import psycopg

            admin, name, _ = dropped
            with psycopg.connect(admin, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(good_agent, delay=0.1) as fake:
        yield fake
    assert not fake.errors, fake.errors


class Site:
    """One deployment: its variables, the workers it started, its store and database."""

    def __init__(self, root: Path, database: Database, redis_url: str, api: FakeAnthropic):
        self.root = root
        self.database = database
        self.store = root / "store"
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": str(root),
            "EVALSITE_ENV_FILE": "",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "DATABASE_URL": database.url,
            "CELERY_BROKER_URL": redis_url,
            "EVALSITE_RUN_STORE": str(self.store),
            "EVALSITE_QUEUE_HEARTBEAT": str(HEARTBEAT),
            "EVALSITE_QUEUE_VISIBILITY_TIMEOUT": str(VISIBILITY),
            "ANTHROPIC_API_KEY": "test-key",
            "ANTHROPIC_BASE_URL": api.url,
            "EVALSITE_API_MAX_RETRIES": "2",
        }
        self.workers: list[subprocess.Popen] = []

    def on(self, machine: str) -> dict[str, str]:
        """The variables of one machine: its own local workspace."""
        return {**self.env, "EVALSITE_WORKSPACE_DIR": str(self.root / machine)}

    def runevals(self, machine: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*MANAGE, "runevals", "--harness", "messages", *args],
            env=self.on(machine),
            capture_output=True,
            text=True,
            timeout=120,
        )

    def start_worker(self, machine: str, pool: str, concurrency: int) -> subprocess.Popen:
        log = (self.root / f"{machine}.log").open("w")
        command = [sys.executable, "-m", "celery", "-A", "evalsite", "worker", f"--pool={pool}"]
        command += [f"--concurrency={concurrency}", "-n", f"{machine}@%h", "-l", "info"]
        command += ["--without-mingle", "--without-gossip", "--without-heartbeat"]
        worker = subprocess.Popen(
            command,
            env=self.on(machine),
            cwd=settings.BASE_DIR,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.workers.append(worker)
        return worker

    def wait_ready(self, machine: str) -> None:
        log = self.root / f"{machine}.log"
        wait_for(lambda: " ready." in log.read_text(), f"worker {machine}", timeout=60)

    def log(self, machine: str) -> str:
        return (self.root / f"{machine}.log").read_text()

    def stop(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
        for worker in self.workers:
            try:
                worker.wait(timeout=15)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()


@pytest.fixture
def site(tmp_path: Path, database: Database, redis_url: str, api: FakeAnthropic) -> Iterator[Site]:
    deployment = Site(tmp_path, database, redis_url, api)
    try:
        yield deployment
    finally:
        deployment.stop()


def queued_runs(site: Site, skill: str) -> list[tuple]:
    return site.database.rows(
        "SELECT r.eval_id, r.condition, r.run_index, r.state, r.attempts, r.worker "
        "FROM campaigns_queuedrun r JOIN campaigns_queuediteration i ON r.iteration_id = i.id "
        f"WHERE i.skill_name = '{skill}' ORDER BY r.id"
    )


def imported_runs(site: Site, skill: str) -> list[tuple]:
    return site.database.rows(
        "SELECT r.eval_id, c.name, r.run_index, r.conversation, r.artifacts "
        "FROM runs_run r JOIN runs_condition c ON r.condition_id = c.id "
        "JOIN runs_iteration i ON c.iteration_id = i.id JOIN runs_skill s ON i.skill_id = s.id "
        f"WHERE s.name = '{skill}'"
    )


def parsed(column: Any) -> Any:
    """A JSON column as read: text from SQLite, already decoded by psycopg."""
    return json.loads(column) if isinstance(column, str) else column


def test_two_workers_with_their_own_workspaces_play_one_campaign_imported_once(
    site: Site, tmp_path: Path
) -> None:
    threads = site.start_worker("machine-a", "threads", 2)
    site.start_worker("machine-b", "prefork", 2)
    site.wait_ready("machine-a")
    site.wait_ready("machine-b")
    skill = make_skill(tmp_path / "skills", name="two-workers")

    done = site.runevals("laptop", "--queue", "--wait", str(skill), "--runs", "2")

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        lines[0].startswith("Queued campaign #") and "two-workers iteration-1 (8 runs)" in lines[0]
    )
    assert lines[-1].startswith("two-workers #1 (iteration-1); with_skill 1.00, without_skill")
    runs = queued_runs(site, "two-workers")
    assert {(state, attempts) for *_, state, attempts, _ in runs} == {("done", 1)}
    pids = {int(worker.rsplit(" ", 1)[1]) for *_, worker in runs}
    assert threads.pid in pids and pids - {threads.pid}, "both machines played runs"
    # Recorded once each; whichever machine played it, its conversation and files are in.
    imported = imported_runs(site, "two-workers")
    assert len(imported) == 8 and len({row[:3] for row in imported}) == 8
    assert all(
        parsed(conversation) and parsed(artifacts) for *_, conversation, artifacts in imported
    )
    folder = site.store / "two-workers" / "iteration-1"
    assert (folder / "benchmark.json").is_file()
    assert len(list(folder.glob("eval-*/*/run-*/grading.json"))) == 8
    for machine in ("machine-a", "machine-b", "laptop"):  # nothing only on one machine
        assert not (tmp_path / machine / "two-workers").exists()
    assert "Traceback" not in site.log("machine-a") + site.log("machine-b")


@pytest.fixture
def slow_api() -> Iterator[FakeAnthropic]:
    """Runs of a few seconds each, so that a worker can be killed in the middle of one."""
    with FakeAnthropic(good_agent, delay=0.6) as fake:
        yield fake
    assert not fake.errors, fake.errors


def test_a_worker_killed_mid_run_has_its_run_played_again_within_seconds_recorded_once(
    site: Site, slow_api: FakeAnthropic, tmp_path: Path
) -> None:
    # As deployed: the broker would deliver the lost run again only after 4 hours; the
    # heartbeat is short so the test is, and recovery should take about 3 beats + a sweep.
    site.env.pop("EVALSITE_QUEUE_VISIBILITY_TIMEOUT")
    site.env.update(EVALSITE_QUEUE_HEARTBEAT="1", ANTHROPIC_BASE_URL=slow_api.url)
    doomed = site.start_worker("machine-k", "threads", 1)
    survivor = site.start_worker("machine-a", "threads", 2)
    site.wait_ready("machine-k")
    site.wait_ready("machine-a")
    skill = make_skill(tmp_path / "skills", name="killed-worker")

    waiting = subprocess.Popen(
        [*MANAGE, "runevals", "--harness", "messages", "--queue", "--wait", str(skill)],
        env=site.on("laptop"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def playing() -> list[tuple]:
            return [
                run
                for run in queued_runs(site, "killed-worker")
                if run[3] == "running" and run[5].endswith(f"pid {doomed.pid}")
            ]

        (killed,) = wait_for(playing, "a run played by machine-k", timeout=30)
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()
        killed_at = time.monotonic()

        def taken_over() -> bool:
            runs = {run[:3]: run[3:] for run in queued_runs(site, "killed-worker")}
            return runs[killed[:3]][1] == 2

        wait_for(taken_over, "the killed worker's run to be claimed again", timeout=30)
        recovered = time.monotonic() - killed_at
        out, err = waiting.communicate(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.communicate()

    assert waiting.returncode == 0, err
    assert out.splitlines()[-1].startswith("killed-worker #1 (iteration-1); with_skill 1.00")
    # Three missed beats, then the next sweep (every beat), then a free slot: seconds.
    assert recovered < 10, f"played again {recovered:.1f} s after the kill"
    print(f"\nthe killed worker's run was claimed again {recovered:.1f} s after kill -9")
    runs = {run[:3]: run[3:] for run in queued_runs(site, "killed-worker")}
    state, attempts, worker = runs[killed[:3]]
    assert state == "done" and attempts == 2 and worker.endswith(f"pid {survivor.pid}")
    assert {state for state, *_ in runs.values()} == {"done"}
    rows = imported_runs(site, "killed-worker")
    assert len(rows) == 4 and len({row[:3] for row in rows}) == 4
    # Sent again by a sweep: the surviving worker's or --wait's, whichever came first.
    resent = f"sent killed-worker iteration-1 eval-{killed[0]}/{killed[1]} again: its worker"
    assert resent in site.log("machine-a") + err
    # The lost attempt left nothing behind in the store: only the iteration folder.
    assert not (site.store / ".queue" / "killed-worker" / "iteration-1").exists()


def test_a_worker_without_a_broker_says_so_and_stops(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "EVALSITE_ENV_FILE": ""}
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool=threads"],
        env={**env, "SECRET_KEY": "queue-tests"},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "CELERY_BROKER_URL is not set: the worker reads runevals --queue's runs" in done.stderr
