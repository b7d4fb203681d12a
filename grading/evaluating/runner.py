"""runevals: run a skill's evals, grade every run, write an eval-magic iteration, import it.

Safe to run from cron: a per-skill lock keeps two invocations apart; each run's files appear
in the iteration folder only once complete (written aside, then renamed into place), so an
interrupted iteration can be resumed without redoing or duplicating a run.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic

from grading.anthropic_client import MessagesClient
from grading.graders.judge import JudgeUnavailable
from grading.sandbox import SandboxError, unsandboxed
from runs import pricing
from runs.importing import import_workspace, iteration_benchmark

from .folders import BUDGET_STOPPED, SkillLock, iteration_folders, unfinished_iteration
from .harness import AgentResult, AgentSettings, Dispatch, Harness
from .messages import MessagesHarness
from .plan import (
    EVALS_JSON_MAX_BYTES,
    SKILL_MD_MAX_BYTES,
    Plan,
    RunPlan,
    read_definition,
)
from .runfolder import grade_run_folder, now, write_error, write_json, write_run
from .spending import SpendingLimit
from .taskdir import build_template, copy_template

log = logging.getLogger(__name__)
#: What a run may meet that is no fault of evalsite's: recorded without a traceback.
EXPECTED_RUN_ERRORS = (anthropic.APIError, JudgeUnavailable, json.JSONDecodeError, SandboxError)


class TimedClient:
    """The Anthropic client seen by one run: same calls, with the time spent waiting counted.

    What a run costs beyond waiting on the API is evalsite's own overhead; the benchmark
    reports it, so it is measured where the calls are made.
    """

    def __init__(self, client: MessagesClient):
        self._client = client
        self.seconds = 0.0
        self.messages = self

    def create(self, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return self._client.messages.create(**kwargs)
        finally:
            self.seconds += time.monotonic() - started


@dataclass
class RunOutcome:
    run: RunPlan
    passed: int | None = None
    total: int | None = None
    errored: str | None = None
    tokens: int = 0
    calls: int = 0
    judge_tokens: int = 0
    judge_calls: int = 0
    #: Agent and judge calls at their models' prices; None when one has no price.
    cost_usd: float | None = None
    seconds: float = 0.0
    api_seconds: float = 0.0
    resumed: bool = False


#: progress(outcome, done, total): one call per finished run.
Progress = Callable[[RunOutcome, int, int], None]


@dataclass
class IterationRun:
    """What one runevals invocation did for one skill."""

    skill: str
    folder: Path
    outcomes: list[RunOutcome] = field(default_factory=list)
    resumed: bool = False
    #: Runs of the plan the spending limit kept from starting (`--resume` plays them).
    not_played: int = 0

    @property
    def api_calls(self) -> int:
        return sum(o.calls + o.judge_calls for o in self.outcomes)

    @property
    def tokens(self) -> int:
        return sum(o.tokens + o.judge_tokens for o in self.outcomes)

    @property
    def errored(self) -> int:
        return sum(1 for o in self.outcomes if o.errored)

    @property
    def cost_usd(self) -> float | None:
        """What this invocation's runs cost (agent and judge); None if one is unpriced."""
        played = [o for o in self.outcomes if not o.resumed]
        if any(o.cost_usd is None for o in played):
            return None
        return sum(o.cost_usd or 0.0 for o in played)


@dataclass
class Settings:
    workspace: Path
    concurrency: int = 4
    max_calls: int = 50
    token_budget: int = 2_000_000
    command_timeout: float = 120.0
    keep_env: bool = False
    responder_model: str | None = None
    harness: Harness = field(default_factory=MessagesHarness)
    #: False only for --unsafe-no-sandbox: agents' commands and command checks run bare.
    sandbox: bool = True
    #: The campaign's --max-cost / --max-tokens, shared by its skills' runners.
    spending: SpendingLimit = field(default_factory=SpendingLimit)


class Runner:
    def __init__(
        self,
        plan: Plan,
        client: MessagesClient,
        settings: Settings,
        *,
        progress: Progress | None = None,
    ):
        self.plan = plan
        self.client = client
        self.settings = settings
        self.progress = progress
        self.skill_folder = settings.workspace / plan.skill.name
        self._done = 0
        self._lock = threading.Lock()
        self._templates: dict[str, tuple[Path, str]] = {}
        self._template_locks: dict[str, threading.Lock] = {}

    def run(self, *, resume: bool = False) -> IterationRun:
        """Run (or finish) an iteration, write benchmark.json and import it."""
        with SkillLock(self.skill_folder), unsandboxed(not self.settings.sandbox):
            folder = unfinished_iteration(self.skill_folder) if resume else None
            result = IterationRun(self.plan.skill.name, folder or self._new_iteration())
            result.resumed = folder is not None
            if folder is not None:
                self._restore_plan(folder)
            else:
                self.write_conditions(result.folder)
            self._run_all(result)
            self.finish(result.folder)
            # Imported like any iteration, but still unfinished for --resume (folders.py).
            marker = result.folder / BUDGET_STOPPED
            if result.not_played:
                marker.write_text(self.settings.spending.stopped + "\n", encoding="utf-8")
            else:
                marker.unlink(missing_ok=True)
        import_workspace([result.folder])
        return result

    def _new_iteration(self) -> Path:
        existing = iteration_folders(self.skill_folder)
        number = existing[-1][0] + 1 if existing else 1
        folder = self.skill_folder / f"iteration-{number}"
        folder.mkdir(parents=True)
        return folder

    def write_conditions(self, folder: Path) -> None:
        """conditions.json, the SKILL.md snapshot and evals.json: the iteration's frame."""
        plan = self.plan
        data: dict[str, Any] = {"mode": plan.mode}
        if plan.baseline_label:
            data["baseline"] = plan.baseline_label
        data.update(
            conditions=[
                {
                    "name": c.name,
                    "skill_path": c.skill.path if c.skill else None,
                    "staged_skill_slug": plan.skill.name if c.skill else None,
                }
                for c in plan.conditions
            ],
            timestamp=now(),
            harness=self.settings.harness.name,
            runs=max((e.runs for e in plan.evals), default=1),
            agent_model=plan.agent_model,
            judge_model=plan.judge_model,
            responder_model=self.settings.responder_model,
            runevals={
                "evals": [e.eval_id for e in plan.evals],
                "harness_version": self.settings.harness.version,
                # Read back on import: an unsandboxed campaign carries a validity warning.
                "sandbox": self.settings.sandbox,
            },
        )
        write_json(folder / "conditions.json", data)
        # Read again without following a link, as make_plan read them: the skill folder
        # is its author's.
        snapshot = read_definition(
            plan.skill_dir / "SKILL.md", max_bytes=SKILL_MD_MAX_BYTES, what="a SKILL.md"
        )
        (folder / "skill-snapshot.md").write_bytes(snapshot)
        # The definitions that ran, beside the results: the importer reads them from here.
        evals_json = plan.skill_dir / "evals" / "evals.json"
        definitions = read_definition(evals_json, max_bytes=EVALS_JSON_MAX_BYTES, what="evals.json")
        (folder / "evals.json").write_bytes(definitions)

    def _restore_plan(self, folder: Path) -> None:
        """On --resume, keep the interrupted iteration's evals and models, not today's flags."""
        recorded = json.loads((folder / "conditions.json").read_text(encoding="utf-8"))
        wanted = set(recorded.get("runevals", {}).get("evals") or [])
        if wanted:
            self.plan.runs = [r for r in self.plan.runs if r.eval_id in wanted]
        self.plan.agent_model = recorded.get("agent_model") or self.plan.agent_model
        self.plan.judge_model = recorded.get("judge_model") or self.plan.judge_model

    def _run_all(self, result: IterationRun) -> None:
        folder = result.folder
        pending = []
        for run in self.plan.runs:
            target = folder / run.relpath
            # A run folder only appears once complete (see run_one); an errored one is retried.
            if target.is_dir() and not (target / "error.json").exists():
                result.outcomes.append(RunOutcome(run, resumed=True))
                continue
            if target.exists():
                shutil.rmtree(target)
            pending.append(run)
        total = len(pending)
        slots = max(1, self.settings.concurrency)
        spending = self.settings.spending
        waiting, running = deque(pending), set()
        with ThreadPoolExecutor(max_workers=slots) as pool:
            while waiting or running:
                # Each run is dispatched only when a slot is free and the budget allows it;
                # once it refuses, the runs in flight finish and nothing else starts.
                while waiting and len(running) < slots:
                    if spending.refusal(in_flight=len(running)):
                        result.not_played = len(waiting)
                        waiting.clear()
                        break
                    running.add(pool.submit(self.run_one, folder, waiting.popleft()))
                if not running:
                    break
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    outcome = future.result()
                    spending.record(
                        tokens=outcome.tokens + outcome.judge_tokens, cost_usd=outcome.cost_usd
                    )
                    result.outcomes.append(outcome)
                    with self._lock:
                        self._done += 1
                        if self.progress:
                            self.progress(outcome, self._done, total)
        shutil.rmtree(folder / ".templates", ignore_errors=True)

    def _template(self, folder: Path, eval_id: str) -> tuple[Path, str]:
        """The eval's task-folder template and its baseline commit, built by its first run.

        Built inside the worker threads, so building overlaps other runs' API calls.
        """
        with self._lock:
            lock = self._template_locks.setdefault(eval_id, threading.Lock())
        with lock:
            if eval_id not in self._templates:
                path = folder / ".templates" / eval_id
                if path.exists():
                    shutil.rmtree(path)
                fixtures = self.plan.eval(eval_id).fixtures
                self._templates[eval_id] = (
                    path,
                    build_template(path, fixtures, evals_dir=self.plan.skill_dir / "evals"),
                )
            return self._templates[eval_id]

    def run_one(self, folder: Path, run: RunPlan) -> RunOutcome:
        """Play, record and grade one run; its folder appears at `folder / run.relpath` only
        once complete. Thread-safe: the local pool and the queue's workers both call it."""
        started = time.monotonic()
        client = TimedClient(self.client)
        case = self.plan.eval(run.eval_id)
        condition = self.plan.condition(run.condition)
        template, baseline = self._template(folder, run.eval_id)
        env = folder / run.env_name
        copy_template(template, env)
        dispatch = Dispatch(
            case=case.case,
            env=env,
            skill=condition.skill,
            skill_dir=self.plan.skill_dir if condition.skill else None,
            agent=AgentSettings(
                model=self.plan.agent_model,
                max_calls=self.settings.max_calls,
                token_budget=self.settings.token_budget,
                responder_model=self.settings.responder_model,
            ),
            client=client,
            result=AgentResult(),
            skill_name=self.plan.skill.name,
        )
        staging = folder / ".partial" / run.relpath
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        outcome = RunOutcome(run)
        agent = dispatch.result
        judge_cost: float | None = 0.0
        try:
            agent = self.settings.harness.run(dispatch)
            write_run(staging, run=run, case=case, condition=condition, env=env, agent=agent)
            graded = grade_run_folder(
                staging,
                client=client,
                plan=self.plan,
                case=case,
                condition=condition,
                task_folder=env,
                baseline_commit=baseline,
                command_timeout=self.settings.command_timeout,
                skill_observable=getattr(self.settings.harness, "observes_skill_calls", True),
            )
            outcome.passed, outcome.total = graded.passed, graded.total
            outcome.judge_tokens, outcome.judge_calls = graded.tokens, graded.calls
            judge_cost = graded.cost_usd
        except Exception as exc:
            # Retries of API faults are the SDK's (429 with retry-after, 529, 5xx, timeouts,
            # dropped connections; a 200 with an unreadable body is a bare JSONDecodeError);
            # still failing, the run is errored, never graded as a failure. So is anything
            # else one run meets — what its agent left behind (a dangling link, a folder
            # where a file belongs) or a fault of ours, logged: the other runs go on.
            if not isinstance(exc, EXPECTED_RUN_ERRORS):
                log.exception("run %s failed", run.relpath)
            outcome.errored = f"{type(exc).__name__}: {_one_line(str(exc))}"
            (staging / "grading.json").unlink(missing_ok=True)
            write_error(staging, outcome.errored, type(exc).__name__, calls=agent.usage.calls)
        for name, data in agent.artifacts.items():
            write_json(staging / name, data)
        outcome.tokens, outcome.calls = agent.usage.total, agent.usage.calls
        outcome.cost_usd = self._cost(agent, judge_cost)
        write_json(
            staging / "timing.json",
            {
                "total_tokens": agent.usage.total,
                "duration_ms": agent.duration_ms,
                "source": "completion-event",
                # The agent's tokens by kind, in the Messages API's names: what prices them.
                "usage": {
                    "input_tokens": agent.usage.input,
                    "output_tokens": agent.usage.output,
                    "cache_creation_input_tokens": agent.usage.cache_creation,
                    "cache_read_input_tokens": agent.usage.cache_read,
                },
            },
        )
        # Only a complete run folder ever appears in the iteration: rename is atomic.
        target = folder / run.relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, target)
        if not self.settings.keep_env:
            shutil.rmtree(env, ignore_errors=True)
        outcome.seconds = time.monotonic() - started
        outcome.api_seconds = client.seconds
        return outcome

    def _cost(self, agent: AgentResult, judge_cost: float | None) -> float | None:
        """The run's agent tokens at the agent model's price, plus its judging."""
        price = pricing.price_of(self.plan.agent_model)
        if price is None or judge_cost is None:
            return None
        usage = agent.usage
        tokens = pricing.Tokens(usage.input, usage.output, usage.cache_creation, usage.cache_read)
        return pricing.cost_usd(price, tokens) + judge_cost

    def finish(self, folder: Path) -> None:
        """benchmark.json from the graded runs, with evalsite's validity warnings."""
        shutil.rmtree(folder / ".partial", ignore_errors=True)
        benchmark = iteration_benchmark(
            folder,
            skill_name=self.plan.skill.name,
            definitions=self.plan.definitions,
            meta={
                "conditions_compared": [c.name for c in self.plan.conditions],
                "generated": now(),
                "baseline": self.plan.baseline_label,
            },
        )
        warnings = benchmark["validity_warnings"]  # benchmark.json holds sentences
        found = self.settings.harness.finish_iteration(folder)
        benchmark["validity_warnings"] = warnings + [w for w in found if w not in warnings]
        write_json(folder / "benchmark.json", benchmark)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]
