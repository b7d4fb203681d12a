"""`manage.py runevals SKILL_DIR…`: run, grade, write and import an iteration per skill, here
or (--queue) on Celery workers; the workflow is grading/campaigns/workflow.py. With
--triggers, each skill's trigger set instead: does its description make the agent load it
(grading/triggering/workflow.py).

Exit status: 0 done; 1 a regression and --fail-on-regression; 2 could not run (no API key,
bad evals.json, no sandbox here and no --unsafe-no-sandbox, the skill locked by another run…).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from grading.campaigns.axes import Combination, combinations, run_axes
from grading.campaigns.options import COULD_NOT_RUN, CampaignError, CampaignOptions
from grading.campaigns.report import progress_line, run_label
from grading.campaigns.workflow import run_evals
from grading.evaluating import claude_code, registry
from grading.evaluating.runner import RunOutcome
from grading.triggering.plan import DEFAULT_SEED
from grading.triggering.play import DEFAULT_TIMEOUT_SECONDS, SessionRecord
from grading.triggering.workflow import run_trigger_evals
from runs.management.progress import CommandProgress
from runs.models import Iteration
from runs.reporting.files import add_report_arguments, check_report_arguments, write_reports

#: Options of eval runs that a trigger campaign has no use for, and the reverse.
NOT_WITH_TRIGGERS = (
    *("baseline", "only", "queue", "wait", "resume", "summary", "junit"),
    *("max_cost", "max_tokens"),
)
TRIGGERS_ONLY = (
    *("description", "siblings", "holdout", "trigger_timeout", "trigger_threshold", "out"),
)


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
        parser.add_argument(
            "--runs",
            type=int,
            default=None,
            help="runs per eval and condition (default 1); with --triggers, per query (default 3)",
        )
        parser.add_argument("--only", help="comma-separated eval ids to run")
        parser.add_argument(
            "--model",
            default=settings.EVALSITE_AGENT_MODEL,
            help="the agent's model; a comma-separated list runs the evals on each",
        )
        parser.add_argument("--judge-model", default=settings.EVALSITE_JUDGE_MODEL)
        parser.add_argument("--responder-model", default=None)
        parser.add_argument("--concurrency", type=int, default=4)
        parser.add_argument(
            "--harness",
            default="claude-code" if claude_code.available() else "messages",
            help=f"one of {', '.join(registry.names())}: claude-code is the Claude Code CLI of "
            "the claude-code extra (the default where it is installed), messages evalsite's own "
            "agent over the Messages API. A comma-separated list (and one of --model) runs the "
            "evals on each harness × model, an iteration each; --max-cost/--max-tokens then "
            "hold across all of them",
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
        budget = parser.add_argument_group("budget (not with --queue)")
        budget.add_argument(
            "--max-cost",
            type=float,
            metavar="USD",
            help="stop dispatching runs before the "
            "campaign's spend (agent and judge, at EVALSITE_PRICES) would pass this; exit 1",
        )
        budget.add_argument(
            "--max-tokens", type=int, metavar="N", help="the same, counted in tokens"
        )
        parser.add_argument(
            "--no-alerts",
            action="store_true",
            help="send no alert (a regression, a failure, a budget stop) to the skill's or the "
            "site's webhooks and e-mail addresses",
        )
        parser.add_argument("--json", action="store_true", help="print the summary as JSON")
        parser.add_argument(
            "--keep-env", action="store_true", help="keep each run's task folder (env-*)"
        )
        add_report_arguments(parser.add_argument_group("CI output (eval runs, once imported)"))
        triggers = parser.add_argument_group("trigger evals (--triggers)")
        triggers.add_argument(
            "--triggers",
            action="store_true",
            help="run each skill's trigger set (evals/trigger-eval.json and its kin): does the "
            "description make the agent load the skill? Writes <out>/<skill>/triggers-<time>/",
        )
        triggers.add_argument(
            "--description",
            action="append",
            metavar="TEXT|FILE",
            help="a description to test instead of SKILL.md's (a file's text, or a SKILL.md's "
            "description); repeat it to compare several in one campaign",
        )
        triggers.add_argument(
            "--siblings",
            action="store_true",
            help="stage the collection's other skill folders beside the skill: measures routing",
        )
        triggers.add_argument(
            "--holdout",
            type=float,
            help="the share of each class held out as test queries (stratified, fixed seed)",
        )
        triggers.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the split's seed")
        triggers.add_argument(
            "--trigger-timeout",
            type=float,
            metavar="SECONDS",
            help=f"a session's time limit (default {DEFAULT_TIMEOUT_SECONDS:g}); "
            "one that runs out is a timeout, never a miss",
        )
        triggers.add_argument(
            "--trigger-threshold",
            type=float,
            metavar="RATE",
            help="a should-trigger query passes at a trigger rate of at least this, a "
            "should-not one below it (default 0.5, skill-creator's)",
        )
        triggers.add_argument(
            "--out", type=Path, help="where results go (default EVALSITE_WORKSPACE_DIR)"
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
        try:
            combos = combinations(options["harness"], options["model"])
        except CampaignError as exc:
            raise CommandError(str(exc), returncode=exc.returncode) from None
        how = CampaignOptions(
            harness=combos[0].harness,
            concurrency=options["concurrency"],
            keep_env=options["keep_env"],
            responder_model=options["responder_model"],
            sandbox=not options["unsafe_no_sandbox"],
            alerts=not options["no_alerts"],
        )
        if len(combos) > 1:
            if options["triggers"]:
                raise CommandError(
                    "--triggers takes one harness and one model", returncode=COULD_NOT_RUN
                )
            self._evals(how, options, log, combos=combos)
            return
        options["model"] = combos[0].model
        if options["triggers"]:
            self._triggers(how, options, log)
            return
        self._evals(how, options, log)

    def _evals(
        self,
        how: CampaignOptions,
        options: dict[str, Any],
        log: Any,
        *,
        combos: list[Combination] | None = None,
    ) -> None:
        """The eval campaign; with `combos`, each harness × model its own campaign
        (grading/campaigns/axes.py)."""
        given = {name for name in TRIGGERS_ONLY if options[name] not in (None, False)}
        if given:
            flags = ", ".join(f"--{name.replace('_', '-')}" for name in sorted(given))
            raise CommandError(f"{flags}: only with --triggers", returncode=COULD_NOT_RUN)
        check_report_arguments(options, returncode=COULD_NOT_RUN)
        common = {
            "skill_dirs": options["skill_dirs"],
            "options": how,
            "judge_model": options["judge_model"],
            "mode": options["mode"],
            "baseline": options["baseline"],
            "runs": options["runs"] or 1,
            "only": [x for x in (options["only"] or "").split(",") if x.strip()],
            "dry_run": options["dry_run"],
            "queue": options["queue"],
            "wait_until_imported": options["wait"],
            "resume": options["resume"],
            "max_cost": options["max_cost"],
            "max_tokens": options["max_tokens"],
            "warn": self.stderr.write,
        }
        try:
            with CommandProgress(log, lines=False) as shown:
                progress = functools.partial(_show, shown)
                if combos is None:
                    result = run_evals(
                        **common, agent_model=options["model"], progress=progress, tell=log.write
                    )
                else:
                    result = run_axes(**common, combos=combos, progress=progress, tell=shown.line)
            self.stdout.write(result.summary(as_json=options["json"]))
            imported = [
                Iteration.objects.select_related("skill").get(
                    skill__name=report["skill"], number=report["iteration"]
                )
                for report in result.reports
            ]
            write_reports(imported, options, self.stdout, returncode=COULD_NOT_RUN)
            result.check(fail_on_regression=options["fail_on_regression"])
        except CampaignError as exc:
            raise CommandError(str(exc), returncode=exc.returncode) from None

    def _triggers(self, how: CampaignOptions, options: dict[str, Any], log: Any) -> None:
        refused = [name for name in NOT_WITH_TRIGGERS if options[name]]
        if options["mode"] != "new-skill":
            refused.insert(0, "mode")
        if refused:
            flags = ", ".join(f"--{name.replace('_', '-')}" for name in refused)
            raise CommandError(f"{flags}: not with --triggers", returncode=COULD_NOT_RUN)
        try:
            with CommandProgress(log, lines=False) as shown:
                result = run_trigger_evals(
                    skill_dirs=options["skill_dirs"],
                    options=how,
                    agent_model=options["model"],
                    descriptions=options["description"] or [],
                    runs=options["runs"] or 3,
                    siblings=options["siblings"],
                    holdout=options["holdout"],
                    seed=options["seed"],
                    timeout=DEFAULT_TIMEOUT_SECONDS
                    if options["trigger_timeout"] is None
                    else options["trigger_timeout"],
                    threshold=0.5
                    if options["trigger_threshold"] is None
                    else options["trigger_threshold"],
                    out=options["out"],
                    dry_run=options["dry_run"],
                    progress=functools.partial(_show_session, shown),
                    warn=self.stderr.write,
                )
            self.stdout.write(result.summary(as_json=options["json"]))
            result.check(fail_on_regression=options["fail_on_regression"])
        except CampaignError as exc:
            raise CommandError(str(exc), returncode=exc.returncode) from None


def _show_session(shown: CommandProgress, record: SessionRecord, done: int, total: int) -> None:
    session = record.session
    label = f"description-{session.description} q-{session.query} run-{session.run}"
    said = record.loaded_skill if record.outcome in ("loaded", "other") else record.error
    shown.line(f"[{done}/{total}] {label}: {record.outcome}{f' ({said})' if said else ''}")
    shown.step(done, total, label)


def _show(shown: CommandProgress, outcome: RunOutcome, done: int, total: int) -> None:
    shown.line(progress_line(outcome, done, total))
    shown.step(done, total, run_label(outcome))
