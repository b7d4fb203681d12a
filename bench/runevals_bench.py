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
extra), sandboxed, through evalsite's API proxy; its overhead per run is the CLI's start-up
and the sandbox's, besides evalsite's own. Its targets are the messages harness's (for
reference: the CLI is not evalsite's to speed up), so read them with `--check` off.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
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


def serve(connection: Any, delay: float) -> None:
    """The fake API in its own process, as the real one is: it must not share our GIL."""
    sys.path.insert(0, str(ROOT))
    from tests.fakeapi import FakeAnthropic

    with FakeAnthropic(agent, delay=delay) as api:
        connection.send(api.url)
        connection.recv()  # until the bench is done
        connection.send(len(api.message_requests))


def measure(skill: Path, *, delay: float, concurrency: int, harness: str) -> Measurement:
    """Time one runevals invocation (in process, as cron runs it) against the fake API."""
    import anthropic
    from django.conf import settings

    from runs.evaluating.claude_code import ClaudeCodeHarness
    from runs.evaluating.harness import MessagesHarness
    from runs.evaluating.plan import make_plan
    from runs.evaluating.runner import Runner, Settings

    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    server = context.Process(target=serve, args=(theirs, delay))
    server.start()
    try:
        url = ours.recv()
        plan = make_plan(skill, agent_model="claude-sonnet-5-5", judge_model="claude-sonnet-5-5")
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
    return Measurement(elapsed, len(result.outcomes), calls, 1000 * sum(own) / len(own))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="runs (evals × 2 conditions)")
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--harness", choices=["messages", "claude-code"], default="messages")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="evalsite-runevals-bench-"))
    os.environ.update(
        DJANGO_SETTINGS_MODULE="evalsite.settings",
        SECRET_KEY="bench",
        DATABASE_URL=f"sqlite:///{work / 'bench.sqlite3'}",
        EVALSITE_WORKSPACE_DIR=str(work / "workspace"),
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    skill = make_skill(work, max(1, args.runs // 2))

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
        (
            "iteration wall / run",
            f"{1000 * quiet.seconds / quiet.runs:.1f} ms",
            "no delay, concurrency 1",
            True,
            "for reference (includes API round trips)",
        ),
    ]
    for name, value, detail, ok, target in rows:
        print(f"{name:18} {value:>10}  {detail:28} {'PASS' if ok else 'FAIL'}  {target}")
    missed = not all(ok for *_, ok, _ in rows)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
