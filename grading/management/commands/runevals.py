"""`manage.py runevals SKILL_DIR…`: run, grade, write and import an iteration per skill, here
or (--queue) on Celery workers; the workflow is grading/campaigns/workflow.py.

Exit status: 0 done; 1 a regression and --fail-on-regression; 2 could not run (no API key,
bad evals.json, no sandbox here and no --unsafe-no-sandbox, the skill locked by another run…).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from grading.campaigns.models import Campaign
from grading.campaigns.options import CampaignError, CampaignOptions
from grading.campaigns.workflow import enqueue, plan_skills, run_here, wait
from grading.evaluating import claude_code
from grading.evaluating.runner import RunOutcome, Settings
from grading.sandbox import sandbox_problem
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
        if options["runs"] < 1 or options["concurrency"] < 1:
            raise CommandError("--runs and --concurrency must be at least 1", returncode=2)
        if options["wait"] and not options["queue"]:
            raise CommandError("--wait follows a queued campaign: add --queue", returncode=2)
        unsafe = options["unsafe_no_sandbox"]
        how = CampaignOptions(
            harness=options["harness"],
            concurrency=options["concurrency"],
            keep_env=options["keep_env"],
            responder_model=options["responder_model"],
            sandbox=not unsafe,
        )
        # With --json, stdout carries only the JSON; progress goes to stderr.
        log = self.stderr if options["json"] else self.stdout
        try:
            plans = plan_skills(
                options["skill_dirs"],
                mode=options["mode"],
                baseline=options["baseline"],
                runs=options["runs"],
                only=[x for x in (options["only"] or "").split(",") if x.strip()],
                agent_model=options["model"],
                judge_model=options["judge_model"],
            )
            if options["dry_run"]:
                for plan in plans:
                    self._print_plan(plan)
                self.stdout.write(self._sandbox_line(unsafe))
                return
            if unsafe:
                self.stderr.write(
                    "runevals: --unsafe-no-sandbox: agents' commands and command checks run "
                    "without the sandbox, with access to this machine's files and processes"
                )
            with CommandProgress(log, lines=False) as progress:
                shown = functools.partial(self._progress, progress)
                if options["queue"]:
                    campaign = enqueue(plans, how, resume=options["resume"])
                    if not options["wait"]:
                        self._print_queued(campaign, as_json=options["json"])
                        return
                    log.write(self._queued_line(campaign))
                    result = wait(campaign, progress=shown)
                else:
                    result = run_here(plans, how, resume=options["resume"], progress=shown)
            if options["json"]:
                reports = result.reports
                self.stdout.write(json.dumps(reports if len(reports) > 1 else reports[0], indent=2))
            else:
                for report in result.reports:
                    self.stdout.write(report["summary"])
            result.check(fail_on_regression=options["fail_on_regression"])
        except CampaignError as exc:
            raise CommandError(str(exc), returncode=exc.returncode) from None

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

    def _queued_line(self, campaign: Campaign) -> str:
        iterations = campaign.iterations.order_by("pk")
        parts = ", ".join(f"{q.skill_name} {q.label} ({q.runs.count()} runs)" for q in iterations)
        return (
            f"Queued {campaign}: {parts}; progress at {campaign.get_absolute_url()} "
            "(workers: celery -A evalsite worker)"
        )

    def _print_queued(self, campaign: Campaign, *, as_json: bool) -> None:
        if not as_json:
            self.stdout.write(self._queued_line(campaign))
            return
        iterations = campaign.iterations.order_by("pk")
        self.stdout.write(
            json.dumps(
                {
                    "campaign": campaign.pk,
                    "url": campaign.get_absolute_url(),
                    "iterations": [
                        {"skill": q.skill_name, "label": q.label, "runs": q.runs.count()}
                        for q in iterations
                    ],
                },
                indent=2,
            )
        )

    def _progress(
        self, progress: CommandProgress, outcome: RunOutcome, done: int, total: int
    ) -> None:
        what = outcome.run.relpath.removeprefix("eval-")
        if outcome.errored:
            detail = f"errored: {outcome.errored}"
        else:
            detail = f"{outcome.passed}/{outcome.total} passed"
        progress.line(
            f"[{done}/{total}] {what}: {detail} ({outcome.seconds:.1f} s, "
            f"{outcome.tokens + outcome.judge_tokens} tokens)"
        )
        progress.step(done, total, what)
