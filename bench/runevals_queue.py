"""`runevals_bench.py --queue`: one campaign's makespan on 1 and on 2 Celery workers.

A real redis-server, the fake API in its own process, and `celery -A evalsite worker`
processes with workspaces of their own and one shared run store; timed from enqueueing to
the iteration imported. Target: 2 workers take <= 0.6x the time of 1.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from bench.runevals_fixture import ROOT, Row, fake_api, make_skill

TARGET_TWO_OVER_ONE = 0.6


def queue_rows(work: Path, args: argparse.Namespace) -> list[Row]:
    """The two makespans, and the verdict on their ratio.

    `--queue-runs` (default 64) is a multiple of both workers' slots (2 x 8): with 40 runs,
    1 worker plays 5 rounds of 8 and 2 workers 3 rounds of 16, so even free scheduling could
    not beat 0.6x; the figure would measure how the last round falls, not the scaling.
    """
    skill = make_skill(work / "queued", max(1, args.queue_runs // 2))
    with redis_server(work) as port, fake_api(args.latency) as api:
        _point_celery_at(port, api.url)
        spans = {count: _makespan_on(count, skill, work, args.concurrency) for count in (1, 2)}
        calls = api.calls()
    ratio = spans[2] / spans[1]
    print(
        f"queue: {calls} API calls in all (warm-ups included), {args.latency:g} s each, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    return [
        ("1 worker", f"{spans[1]:.2f} s", f"concurrency {args.concurrency}", True, "makespan"),
        (
            "2 workers",
            f"{spans[2]:.2f} s",
            f"concurrency {args.concurrency} each",
            ratio <= TARGET_TWO_OVER_ONE,
            f"{ratio:.2f}× 1 worker (target ≤ {TARGET_TWO_OVER_ONE:g}×)",
        ),
    ]


@contextlib.contextmanager
def redis_server(work: Path) -> Iterator[int]:
    """A redis-server on a free port for the duration; yields the port."""
    redis_binary = shutil.which("redis-server")
    if redis_binary is None:
        raise SystemExit("--queue needs redis-server (apt-get install redis-server)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    redis = subprocess.Popen(
        [redis_binary, "--port", str(port), "--save", "", "--dir", str(work)],
        stdout=subprocess.DEVNULL,
    )
    try:
        yield port
    finally:
        redis.terminate()
        redis.wait(timeout=10)


def _point_celery_at(port: int, api_url: str) -> None:
    """The broker and the API for this process and the workers it starts."""
    from django.conf import settings

    # The workers' store is this process's (the bench workspace), wherever they work.
    os.environ.update(
        CELERY_BROKER_URL=f"redis://127.0.0.1:{port}/0",
        EVALSITE_RUN_STORE=settings.STORAGES["runs"]["OPTIONS"]["location"],
        EVALSITE_ENV_FILE="",
        ANTHROPIC_API_KEY="bench",
        ANTHROPIC_BASE_URL=api_url,
    )
    settings.CELERY_BROKER_URL = os.environ["CELERY_BROKER_URL"]
    from evalsite.celery import app

    app.conf.broker_url = settings.CELERY_BROKER_URL


def _makespan_on(count: int, skill: Path, work: Path, concurrency: int) -> float:
    """The campaign's makespan on `count` fresh workers, after a small warm-up campaign."""
    workers = [_start_worker(work, f"w{count}-{i}", concurrency) for i in range(count)]
    try:
        # Each worker's first runs pay its imports and client set-up.
        _queued_makespan(make_skill(work / f"warm-up-{count}", 2 * count))
        return _queued_makespan(skill)
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=30)


def _start_worker(work: Path, name: str, concurrency: int) -> subprocess.Popen:
    log = work / f"{name}.log"
    command = [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool=threads"]
    command += [f"--concurrency={concurrency}", "-n", f"{name}@%h", "-l", "info"]
    command += ["--without-mingle", "--without-gossip", "--without-heartbeat"]
    worker = subprocess.Popen(
        command,
        env={**os.environ, "EVALSITE_WORKSPACE_DIR": str(work / name)},
        cwd=ROOT,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while " ready." not in log.read_text():
        if worker.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"worker {name} did not start:\n{log.read_text()}")
        time.sleep(0.1)
    return worker


def _queued_makespan(skill: Path) -> float:
    """Seconds from `runevals --queue` to its iteration imported."""
    from grading.campaigns.models import QueuedIteration
    from grading.campaigns.options import CampaignOptions
    from grading.campaigns.workflow import enqueue, plan_skills

    plans = plan_skills([skill], agent_model="claude-sonnet-5-5", judge_model="claude-sonnet-5-5")
    started = time.perf_counter()
    campaign = enqueue(plans, CampaignOptions(harness="messages"))
    while campaign.iterations.filter(state__in=QueuedIteration.ACTIVE).exists():
        if time.perf_counter() - started > 600:
            raise SystemExit(f"{campaign} is not done after 600 s; see the workers' logs")
        time.sleep(0.02)
    elapsed = time.perf_counter() - started
    (state,) = campaign.iterations.values_list("state", flat=True)
    if state != QueuedIteration.State.IMPORTED:
        raise SystemExit(f"the queued campaign ended {state}")
    return elapsed
