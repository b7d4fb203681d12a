"""`manage.py runevals SKILL_DIR…`: run, grade, write and import an iteration per skill.

Exit status: 0 done; 1 a regression and --fail-on-regression; 2 could not run (no API key,
bad evals.json, no sandbox here and no --unsafe-no-sandbox, the skill locked by another run…).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anthropic
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.evaluating import claude_code
from runs.evaluating.folders import LockHeld
from runs.evaluating.harness import MessagesHarness
from runs.evaluating.plan import PlanError, make_plan
from runs.evaluating.report import iteration_report
from runs.evaluating.runner import Runner, RunOutcome, Settings
from runs.evaluating.sandbox import sandbox_problem
from runs.importing import ImportFailure

COULD_NOT_RUN = 2
REGRESSION = 1


class Command(BaseCommand):
    help = (
        "Run each skill's evals against the Anthropic API (with and without the skill, or old "
        "vs new), grade every run, write an eval-magic iteration folder under "
        "EVALSITE_WORKSPACE_DIR and import it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("skill_dirs", nargs="+", type=Path, metavar="SKILL_DIR")
        parser.add_argument("--mode", choices=["new-skill", "revision"], default="new-skill")
        parser.add_argument(
            "--baseline", help="revision mode: a folder holding the old SKILL.md, or a git ref"
        )
        parser.add_argument("--runs", type=int, default=1, help="runs per eval and condition")
        parser.add_argument("--only", help="comma-separated eval ids to run")
        parser.add_argument("--model", default=settings.EVALSITE_AGENT_MODEL)
        parser.add_argument("--judge-model", default=settings.EVALSITE_JUDGE_MODEL)
        parser.add_argument("--responder-model", default=None)
        parser.add_argument("--concurrency", type=int, default=4)
        parser.add_argument(
            "--harness",
            choices=["claude-code", "messages"],
            default="claude-code" if claude_code.available() else "messages",
            help="claude-code: the Claude Code CLI of the claude-code extra (the default where "
            "it is installed); messages: evalsite's own agent over the Messages API",
        )
        parser.add_argument("--resume", action="store_true", help="finish an interrupted run")
        parser.add_argument(
            "--dry-run", action="store_true", help="validate and print the plan; call nothing"
        )
        parser.add_argument("--fail-on-regression", action="store_true")
        parser.add_argument("--json", action="store_true", help="print the summary as JSON")
        parser.add_argument(
            "--keep-env", action="store_true", help="keep each run's task folder (env-*)"
        )
        parser.add_argument(
            "--unsafe-no-sandbox",
            action="store_true",
            help="run agents' commands and command checks without the bubblewrap sandbox "
            "(where it cannot run): they can then read this machine's files and secrets",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["runs"] < 1 or options["concurrency"] < 1:
            raise CommandError("--runs and --concurrency must be at least 1", returncode=2)
        plans = []
        for skill_dir in options["skill_dirs"]:
            try:
                plans.append(
                    make_plan(
                        skill_dir,
                        mode=options["mode"],
                        baseline=options["baseline"],
                        runs=options["runs"],
                        only=[x for x in (options["only"] or "").split(",") if x.strip()],
                        agent_model=options["model"],
                        judge_model=options["judge_model"],
                    )
                )
            except PlanError as exc:
                raise CommandError(str(exc), returncode=COULD_NOT_RUN) from None
        unsafe = options["unsafe_no_sandbox"]
        if options["dry_run"]:
            for plan in plans:
                self._print_plan(plan)
            self.stdout.write(self._sandbox_line(unsafe))
            return
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise CommandError(
                "ANTHROPIC_API_KEY is not set: runevals needs it to call the Anthropic API",
                returncode=COULD_NOT_RUN,
            )
        # Never a silent downgrade: without the sandbox an agent's Bash reads this process's
        # environment (the API key, SECRET_KEY) and the site's database.
        problem = sandbox_problem()
        if unsafe:
            self.stderr.write(
                "runevals: --unsafe-no-sandbox: agents' commands and command checks run "
                "without the sandbox, with access to this machine's files and processes"
            )
        elif problem is not None:
            raise CommandError(
                f"cannot sandbox agents' commands here: {problem}; "
                "pass --unsafe-no-sandbox to run them without the sandbox",
                returncode=COULD_NOT_RUN,
            )
        if options["harness"] == "claude-code" and not claude_code.available():
            raise CommandError(
                "--harness claude-code needs the extra: pip install -e '.[claude-code]'",
                returncode=COULD_NOT_RUN,
            )
        harness = (
            claude_code.ClaudeCodeHarness()
            if options["harness"] == "claude-code"
            else MessagesHarness()
        )
        # With --json, stdout carries only the JSON; progress goes to stderr.
        self.log = self.stderr if options["json"] else self.stdout
        client = anthropic.Anthropic(
            max_retries=settings.EVALSITE_API_MAX_RETRIES,
            timeout=settings.EVALSITE_API_TIMEOUT,
        )
        reports, regression = [], False
        for plan in plans:
            runner = Runner(
                plan,
                client,
                Settings(
                    workspace=settings.EVALSITE_WORKSPACE_DIR,
                    concurrency=options["concurrency"],
                    keep_env=options["keep_env"],
                    responder_model=options["responder_model"],
                    sandbox=not unsafe,
                    harness=harness,
                ),
                progress=self._progress,
            )
            try:
                result = runner.run(resume=options["resume"])
            except LockHeld as exc:
                raise CommandError(str(exc), returncode=COULD_NOT_RUN) from None
            except ImportFailure as exc:
                raise CommandError(f"import failed: {exc.message}", returncode=2) from None
            report = iteration_report(result)
            regression = regression or report["regression"]
            reports.append(report)
            self._end_progress()
            if not options["json"]:
                self.stdout.write(report["summary"])
        if options["json"]:
            self.stdout.write(json.dumps(reports if len(reports) > 1 else reports[0], indent=2))
        if regression and options["fail_on_regression"]:
            sys.exit(REGRESSION)

    def _print_plan(self, plan: Any) -> None:
        fewest, most, judges = plan.api_calls(max_calls=Settings(Path()).max_calls)
        cells = len(plan.runs)
        self.stdout.write(
            f"{plan.skill.name}: {plan.mode}, {len(plan.evals)} evals × "
            f"{len(plan.conditions)} conditions ({', '.join(c.name for c in plan.conditions)})"
            f" = {cells} runs; agent {plan.agent_model}, judge {plan.judge_model}"
        )
        for case in plan.evals:
            kinds = ", ".join(sorted({a.get("type", "llm_judge") for a in case.assertions}))
            self.stdout.write(
                f"  {case.eval_id}: {case.runs} run(s) per condition, "
                f"{len(case.assertions)} assertion(s){f' ({kinds})' if kinds else ''}"
                f"{', negative' if not case.skill_should_trigger else ''}"
            )
        self.stdout.write(
            f"API calls: {fewest + judges} at least ({fewest} agent, {judges} judge), "
            f"at most {most + judges} (agent calls are capped at "
            f"{Settings(Path()).max_calls} per run)"
        )

    def _sandbox_line(self, unsafe: bool) -> str:
        if unsafe:
            return "Sandbox: off (--unsafe-no-sandbox)"
        problem = sandbox_problem()
        if problem is None:
            return "Sandbox: bubblewrap"
        return f"Sandbox: unavailable here ({problem}); a real run needs --unsafe-no-sandbox"

    def _progress(self, outcome: RunOutcome, done: int, total: int) -> None:
        what = outcome.run.relpath.removeprefix("eval-")
        if outcome.errored:
            detail = f"errored: {outcome.errored}"
        else:
            detail = f"{outcome.passed}/{outcome.total} passed"
        line = (
            f"[{done}/{total}] {what}: {detail} ({outcome.seconds:.1f} s, "
            f"{outcome.tokens + outcome.judge_tokens} tokens)"
        )
        if self.log.isatty():
            width = 24
            bar = "#" * (width * done // total) + "-" * (width - width * done // total)
            self.log.write(f"\r\033[K[{bar}] {line}", ending="")
            self.log.flush()
        else:
            self.log.write(line)

    def _end_progress(self) -> None:
        if self.log.isatty():
            self.log.write("\r\033[K", ending="")
