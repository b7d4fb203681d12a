"""runevals throughput against the fake Messages API (issue "runevals" targets).

    python bench/runevals_bench.py [--runs 40] [--delay 0.2] [--concurrency 8] [--check]
                                   [--harness messages|claude-code]

Two measurements, in one process, on a fresh SQLite database:

1. Throughput: 40 runs of 4 API calls each (3 agent calls, 1 judge call) with the fake server
   answering every call after `--delay` seconds, at `--concurrency 8`. The ideal is
   calls × delay ÷ concurrency; the target is ≤ 1.3× the ideal.
2. Overhead: the same runs with no delay and concurrency 1; per run, its wall time minus the
   time its API calls took is what evalsite itself spends (task folder, tools, grading,
   writing files). Target: under 50 ms.

The fake API runs in a process of its own, as the real one is remote: in-process, its
threads would compete with runevals' for the interpreter and inflate both figures.

With `--harness claude-code` each run is played by the Claude Code CLI (the claude-code
extra), sandboxed, through evalsite's API proxy. The CLI's own start-up and work (hundreds
of ms of CPU per process) is not evalsite's, so its targets are set against a floor measured
in the same session (bench/floor_claude_code.py): the same runs played by the bare CLI, with
no sandbox, proxy or grading. The target: wall time ≤ 1.3× the floor's at the same
concurrency. Evalsite's own time per run (mean run time minus the floor's, no delay,
concurrency 1) is stated, as the issue asks; the messages harness's < 50 ms is for its own
agent, which has no CLI process to start, sandbox and relay.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def make_skill(root: Path, evals: int) -> Path:
    skill = root / "bench-skill"
    (skill / "evals" / "fixtures").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: bench-skill\ndescription: Use when benchmarking.\n---\nBody.\n"
    )
    (skill / "evals" / "fixtures" / "README.md").write_text("# Fixture\n" + "line\n" * 50)
    cases = [
        {
            "id": f"case-{i:02d}",
            "prompt": f"Task {i}: read the README and write notes.md.",
            "expected_output": "notes.md exists.",
            "files": ["fixtures/README.md"],
            "assertions": [
                {
                    "id": "read-first",
                    "type": "transcript_check",
                    "check": "tool_invocation_matches",
                    "pattern": "Read .*README",
                    "must_precede": "first_write",
                },
                {"id": "summary", "type": "llm_judge", "rubric": "Is notes.md a summary?"},
            ],
        }
        for i in range(evals)
    ]
    (skill / "evals" / "evals.json").write_text(
        json.dumps({"skill_name": "bench-skill", "evals": cases})
    )
    return skill


def agent(request: Any) -> Any:
    import re

    from tests.fakeapi import judge_verdict, reply, tool_use

    if request.forced_tool:
        return judge_verdict(True, "notes.md quotes the README", 0.9)
    # The CLI's file tools take absolute paths; its prompt names the task folder.
    found = re.search(r"Primary working directory: ([^\s\\]+)", json.dumps(request.messages))
    root = f"{found.group(1)}/" if found else ""
    turn = request.assistant_turns
    if turn == 0:
        return reply(tool_use("Read", {"file_path": f"{root}fixtures/README.md"}))
    if turn == 1:
        return reply(tool_use("Write", {"file_path": f"{root}notes.md", "content": "Notes.\n"}))
    return reply("Done.")


@dataclass
class Measurement:
    seconds: float
    runs: int
    calls: int
    #: Per run: its wall time minus the time its API calls took, averaged.
    own_ms: float
    #: Per run: its wall time, averaged.
    run_ms: float = 0.0


def serve(connection: Any, delay: float) -> None:
    """The fake API in its own process, as the real one is: it must not share our GIL."""
    sys.path.insert(0, str(ROOT))
    from tests.fakeapi import FakeAnthropic

    with FakeAnthropic(agent, delay=delay) as api:
        connection.send(api.url)
        connection.recv()  # until the bench is done
        connection.send(len(api.message_requests))


def measure(skill: Path, *, delay: float, concurrency: int, harness: str) -> Measurement:
    """Time one runevals invocation (in process, as cron runs it) against the fake API.

    `harness` "floor" plays the same runs with the bare CLI instead (bench/floor_claude_code.py).
    """
    import anthropic
    from django.conf import settings

    from bench.floor_claude_code import floor
    from grading.evaluating.claude_code import ClaudeCodeHarness
    from grading.evaluating.harness import MessagesHarness
    from grading.evaluating.plan import make_plan
    from grading.evaluating.runner import Runner, Settings

    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    server = context.Process(target=serve, args=(theirs, delay))
    server.start()
    try:
        url = ours.recv()
        plan = make_plan(skill, agent_model="claude-sonnet-5-5", judge_model="claude-sonnet-5-5")
        if harness == "floor":
            bare = floor(plan, url=url, concurrency=concurrency)
            ours.send("done")
            return Measurement(bare.seconds, bare.runs, ours.recv(), 0.0, bare.run_ms)
        client = anthropic.Anthropic(api_key="bench", base_url=url, max_retries=2)
        # The CLI's proxy reaches the API as runevals' own client would: from the environment.
        os.environ.update(ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=url)
        runner = Runner(
            plan,
            client,
            Settings(
                workspace=Path(settings.EVALSITE_WORKSPACE_DIR),
                concurrency=concurrency,
                harness=ClaudeCodeHarness() if harness == "claude-code" else MessagesHarness(),
            ),
        )
        started = time.perf_counter()
        result = runner.run()
        elapsed = time.perf_counter() - started
        ours.send("done")
        calls = ours.recv()
    finally:
        server.join(timeout=10)
        if server.is_alive():
            server.terminate()
    own = [o.seconds - o.api_seconds for o in result.outcomes]
    mean_run = 1000 * sum(o.seconds for o in result.outcomes) / len(result.outcomes)
    return Measurement(elapsed, len(result.outcomes), calls, 1000 * sum(own) / len(own), mean_run)


def claude_code_rows(
    skill: Path, args: argparse.Namespace, loaded: Measurement, quiet: Measurement
) -> list[tuple[str, str, str, bool, str]]:
    """The claude-code targets, against the bare CLI doing the same runs in the same session.

    The CLI's own start-up and work (hundreds of ms of CPU per process) is not evalsite's to
    speed up; what runevals adds around it is: the ratio of wall times at the bench's
    concurrency, and the difference of mean run times with no delay at concurrency 1.
    """
    # Interleaved, best of --repeat each: the two sides see the same machine, and a burst
    # of load elsewhere (the sandboxed CLI runs at niceness 10, so it loses more to one
    # than the bare CLI does) does not land on one side only.
    bare = measure(skill, delay=args.delay, concurrency=args.concurrency, harness="floor")
    bare_quiet = measure(skill, delay=0.0, concurrency=1, harness="floor")
    busy = {"delay": args.delay, "concurrency": args.concurrency}
    for _ in range(args.repeat - 1):
        again = measure(skill, **busy, harness="claude-code")
        loaded = min(loaded, again, key=lambda m: m.seconds)
        again = measure(skill, **busy, harness="floor")
        bare = min(bare, again, key=lambda m: m.seconds)
        again = measure(skill, delay=0.0, concurrency=1, harness="claude-code")
        quiet = min(quiet, again, key=lambda m: m.run_ms)
        again = measure(skill, delay=0.0, concurrency=1, harness="floor")
        bare_quiet = min(bare_quiet, again, key=lambda m: m.run_ms)
    ratio = loaded.seconds / bare.seconds
    own = quiet.run_ms - bare_quiet.run_ms
    return [
        (
            "wall time",
            f"{loaded.seconds:.2f} s",
            f"bare CLI {bare.seconds:.2f} s",
            ratio <= 1.3,
            f"{ratio:.2f}× the bare CLI (target ≤ 1.3×)",
        ),
        (
            "own time per run",
            f"{own:.1f} ms",
            f"{quiet.run_ms:.0f} − {bare_quiet.run_ms:.0f} ms bare",
            True,
            "stated (the sandbox, proxy, transcript, grading and files around the CLI)",
        ),
        (
            "CLI time per run",
            f"{bare_quiet.run_ms:.0f} ms",
            "bare CLI + judge, no delay",
            True,
            "for reference (the CLI's own cost)",
        ),
    ]


# --- --queue: the same campaign over Celery workers ----------------------------------------


def queue_rows(work: Path, args: argparse.Namespace) -> list[tuple]:
    """Makespan of one queued campaign on 1 and on 2 workers of `--concurrency` each.

    A real redis-server, the fake API in its own process, and `celery -A evalsite worker`
    processes with workspaces of their own and one shared run store; timed from enqueueing to
    the iteration imported. Target: 2 workers take ≤ 0.6× the time of 1.

    `--queue-runs` (default 64) is a multiple of both workers' slots (2 × 8): with 40 runs,
    1 worker plays 5 rounds of 8 and 2 workers 3 rounds of 16, so even free scheduling could
    not beat 0.6×; the figure would measure how the last round falls, not the scaling.
    """
    skill = make_skill(work / "queued", max(1, args.queue_runs // 2))
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
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    server = context.Process(target=serve, args=(theirs, args.delay))
    server.start()
    try:
        from django.conf import settings

        # The workers' store is this process's (the bench workspace), wherever they work.
        os.environ.update(
            CELERY_BROKER_URL=f"redis://127.0.0.1:{port}/0",
            EVALSITE_RUN_STORE=settings.STORAGES["runs"]["OPTIONS"]["location"],
            EVALSITE_ENV_FILE="",
            ANTHROPIC_API_KEY="bench",
            ANTHROPIC_BASE_URL=ours.recv(),
        )
        settings.CELERY_BROKER_URL = os.environ["CELERY_BROKER_URL"]
        from evalsite.celery import app

        app.conf.broker_url = settings.CELERY_BROKER_URL
        spans = {}
        for count in (1, 2):
            workers = [_start_worker(work, f"w{count}-{i}", args.concurrency) for i in range(count)]
            try:
                # Each worker's first runs pay its imports and client set-up.
                _queued_makespan(make_skill(work / f"warm-up-{count}", 2 * count))
                spans[count] = _queued_makespan(skill)
            finally:
                for worker in workers:
                    worker.terminate()
                for worker in workers:
                    worker.wait(timeout=30)
        ours.send("done")
        calls = ours.recv()
    finally:
        server.join(timeout=10)
        if server.is_alive():
            server.terminate()
        redis.terminate()
        redis.wait(timeout=10)
    ratio = spans[2] / spans[1]
    print(f"queue: {calls} API calls in all (warm-ups included), load {os.getloadavg()[0]:.1f}")
    return [
        ("1 worker", f"{spans[1]:.2f} s", f"concurrency {args.concurrency}", True, "makespan"),
        (
            "2 workers",
            f"{spans[2]:.2f} s",
            f"concurrency {args.concurrency} each",
            ratio <= 0.6,
            f"{ratio:.2f}× 1 worker (target ≤ 0.6×)",
        ),
    ]


def report(rows: list[tuple], args: argparse.Namespace) -> int:
    """Print the queue rows as main prints its own; 1 with --check when a target is missed."""
    for name, value, detail, ok, target in rows:
        print(f"{name:18} {value:>10}  {detail:28} {'PASS' if ok else 'FAIL'}  {target}")
    return 1 if args.check and not all(ok for *_, ok, _ in rows) else 0


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
        if time.perf_counter() - started > 300:
            raise SystemExit(f"{campaign} is not done after 300 s; see the workers' logs")
        time.sleep(0.02)
    elapsed = time.perf_counter() - started
    (state,) = campaign.iterations.values_list("state", flat=True)
    if state != QueuedIteration.State.IMPORTED:
        raise SystemExit(f"the queued campaign ended {state}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="runs (evals × 2 conditions)")
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--harness", choices=["messages", "claude-code"], default="messages")
    parser.add_argument(
        "--repeat", type=int, default=1, help="claude-code: measure both sides N times, best of"
    )
    parser.add_argument(
        "--queue", action="store_true", help="the campaign over Celery: 1 worker vs 2 workers"
    )
    parser.add_argument("--queue-runs", type=int, default=64, help="runs of the --queue campaign")
    parser.add_argument(
        "--database",
        choices=["sqlite", "postgres"],
        default="sqlite",
        help="a fresh SQLite file, or a fresh database on the local PostgreSQL (as deployed "
        "with workers: several processes writing)",
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="evalsite-runevals-bench-"))
    with fresh_database(args.database, work) as url:
        os.environ.update(
            DJANGO_SETTINGS_MODULE="evalsite.settings",
            SECRET_KEY="bench",
            DATABASE_URL=url,
            EVALSITE_WORKSPACE_DIR=str(work / "workspace"),
        )
        return bench(work, args)


@contextlib.contextmanager
def fresh_database(kind: str, work: Path) -> Iterator[str]:
    """A database for this bench only (dropped after it, even on error); its URL."""
    if kind == "sqlite":
        yield f"sqlite:///{work / 'bench.sqlite3'}"
        return
    import psycopg

    from bench.import_bench import POSTGRES, drop_database

    name = f"evalsite_bench_runevals_{os.getpid()}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{POSTGRES}/{name}"
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(name)


def bench(work: Path, args: argparse.Namespace) -> int:
    """The measurements, once the database is chosen."""
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    skill = make_skill(work, max(1, args.runs // 2))
    if args.queue:
        return report(queue_rows(work, args), args)

    harness = args.harness
    # Imports, TLS set-up (and the CLI's first start, from a cold page cache).
    measure(make_skill(work / "warm-up", 1), delay=0.0, concurrency=1, harness=harness)
    loaded = measure(skill, delay=args.delay, concurrency=args.concurrency, harness=harness)
    ideal = loaded.calls * args.delay / args.concurrency
    ratio = loaded.seconds / ideal if ideal else float("nan")
    quiet = measure(skill, delay=0.0, concurrency=1, harness=harness)

    print(
        f"nproc {os.cpu_count()}, harness {harness}, {loaded.runs} runs, {loaded.calls} API "
        f"calls, delay {args.delay}s, concurrency {args.concurrency}"
    )
    if harness == "claude-code":
        rows = claude_code_rows(skill, args, loaded, quiet)
    else:
        rows = [
            (
                "wall time",
                f"{loaded.seconds:.2f} s",
                f"ideal {ideal:.2f} s",
                ratio <= 1.3,
                f"{ratio:.2f}× ideal (target ≤ 1.3×)",
            ),
            (
                "own time per run",
                f"{quiet.own_ms:.1f} ms",
                "run wall time minus API waits",
                quiet.own_ms < 50,
                "target < 50 ms",
            ),
        ]
    rows.append(
        (
            "iteration wall / run",
            f"{1000 * quiet.seconds / quiet.runs:.1f} ms",
            "no delay, concurrency 1",
            True,
            "for reference (includes API round trips)",
        )
    )
    for name, value, detail, ok, target in rows:
        print(f"{name:18} {value:>10}  {detail:28} {'PASS' if ok else 'FAIL'}  {target}")
    missed = not all(ok for *_, ok, _ in rows)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
