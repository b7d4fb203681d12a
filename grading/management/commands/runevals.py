"""`manage.py runevals SKILL_DIR…`: run, grade, write and import an iteration per skill, here
or (--queue) on Celery workers; the workflow is grading/campaigns/workflow.py.

Exit status: 0 done; 1 a regression and --fail-on-regression; 2 could not run (no API key,
bad evals.json, no sandbox here and no --unsafe-no-sandbox, the skill locked by another run…).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from grading.campaigns.options import CampaignError, CampaignOptions
from grading.campaigns.report import progress_line, run_label
from grading.campaigns.workflow import run_evals
from grading.evaluating import claude_code
from grading.evaluating.runner import RunOutcome
from runs.management.progress import CommandProgress


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
        parser.add_argument(
            "--resume",
            action="store_true",
            help="finish an interrupted run (with --queue: the skill's unfinished queued one)",
        )
        parser.add_argument(
            "--queue",
            action="store_true",
            help="send the runs to Celery workers (celery -A evalsite worker, CELERY_BROKER_URL) "
            "and return; the last run's worker imports the iteration",
        )
        parser.add_argument(
            "--wait",
            action="store_true",
            help="with --queue: wait until every iteration is imported; the usual exit status",
        )
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
        # With --json, stdout carries only the JSON; progress goes to stderr.
        log = self.stderr if options["json"] else self.stdout
        how = CampaignOptions(
            harness=options["harness"],
            concurrency=options["concurrency"],
            keep_env=options["keep_env"],
            responder_model=options["responder_model"],
            sandbox=not options["unsafe_no_sandbox"],
        )
        try:
            with CommandProgress(log, lines=False) as shown:
                result = run_evals(
                    skill_dirs=options["skill_dirs"],
                    options=how,
                    agent_model=options["model"],
                    judge_model=options["judge_model"],
                    mode=options["mode"],
                    baseline=options["baseline"],
                    runs=options["runs"],
                    only=[x for x in (options["only"] or "").split(",") if x.strip()],
                    dry_run=options["dry_run"],
                    queue=options["queue"],
                    wait_until_imported=options["wait"],
                    resume=options["resume"],
                    progress=functools.partial(_show, shown),
                    tell=log.write,
                    warn=self.stderr.write,
                )
            self.stdout.write(result.summary(as_json=options["json"]))
            result.check(fail_on_regression=options["fail_on_regression"])
        except CampaignError as exc:
            raise CommandError(str(exc), returncode=exc.returncode) from None


def _show(shown: CommandProgress, outcome: RunOutcome, done: int, total: int) -> None:
    shown.line(progress_line(outcome, done, total))
    shown.step(done, total, run_label(outcome))
