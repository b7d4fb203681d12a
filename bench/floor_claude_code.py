"""The floor for `runevals --harness claude-code`: the same CLI doing the same runs, bare.

For each run of the plan: a fresh copy of the eval's files (and, in a skill-loading
condition, the skill as a project skill, as runevals stages it), a fresh config folder, then
the bundled Claude Code CLI with the arguments runevals gives it, straight at the API (no
sandbox, no proxy, no evalsite), then one judge call with the `anthropic` client: what any
tool running these evals with this CLI has to spend. What runevals spends beyond this, per
run, is its own overhead: staging, the sandbox, the API proxy, the transcript, grading and
writing the run's files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Floor:
    seconds: float
    runs: int
    #: Mean wall time of one run (CLI process + judge call).
    run_ms: float


def floor(plan: Any, *, url: str, concurrency: int) -> Floor:
    """Play every run of `plan` with the bare CLI at `concurrency`, against the API at `url`."""
    import anthropic

    from grading.evaluating.claude_code.cli import ENVIRONMENT, cli_arguments, cli_path

    binary = cli_path()
    if binary is None:
        raise SystemExit("the claude-code floor needs the extra: pip install -e '.[claude-code]'")
    client = anthropic.Anthropic(api_key="bench", base_url=url, max_retries=2)
    work = Path(tempfile.mkdtemp(prefix="evalsite-cc-floor-"))

    def one(index: int, run: Any) -> float:
        case, condition = plan.eval(run.eval_id), plan.condition(run.condition)
        started = time.perf_counter()
        task = work / f"run-{index}"
        for source, target in case.fixtures:
            (task / "env" / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, task / "env" / target)
        home = task / "home"
        (home / ".claude").mkdir(parents=True)
        if condition.skill is not None:
            skill = Path(condition.skill.path).parent
            target = task / "env" / ".claude" / "skills" / plan.skill.name
            shutil.copytree(skill, target, ignore=shutil.ignore_patterns("evals", ".git"))
        argv = cli_arguments(
            binary,
            model=plan.agent_model,
            session=["--session-id", _uuid(index)],
            prompt=case.case["prompt"],
            env=task / "env",
        )
        env = {
            **ENVIRONMENT,
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "bench",
        }
        done = subprocess.run(
            argv, cwd=task / "env", env=env, capture_output=True, timeout=300, check=False
        )
        if b'"type":"result"' not in done.stdout:
            raise SystemExit(f"floor run {index}: the CLI gave no result: {done.stderr[-300:]!r}")
        client.messages.create(
            model=plan.judge_model,
            max_tokens=512,
            messages=[{"role": "user", "content": "Grade: " + case.case["prompt"]}],
            tools=[{"name": "verdict", "input_schema": {"type": "object"}}],
            tool_choice={"type": "tool", "name": "verdict"},
        )
        return time.perf_counter() - started

    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(concurrency) as pool:
            times = list(pool.map(one, range(len(plan.runs)), plan.runs))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    elapsed = time.perf_counter() - started
    return Floor(elapsed, len(times), 1000 * sum(times) / len(times))


def _uuid(index: int) -> str:
    return f"00000000-0000-4000-8000-{index:012d}"
