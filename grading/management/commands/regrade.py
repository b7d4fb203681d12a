"""`manage.py regrade SKILL ITERATION`: grade imported runs again, through runevals' graders.

Exit status: 0 done; 1 bad input (unknown skill, iteration or assertion); 2 could not run
(judge assertions to ask and no ANTHROPIC_API_KEY, or the judge unreachable: nothing saved).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from grading.anthropic_client import anthropic_client, api_key
from grading.regrading import (
    JudgeFailed,
    JudgeNeeded,
    RegradeError,
    find_iteration,
    regrade_iteration,
)
from runs.management.progress import PROGRESS_THRESHOLD, CommandProgress

COULD_NOT_RUN = 2


class Command(BaseCommand):
    help = (
        "Grade an imported iteration's runs that have no grading, or regrade them (with "
        "another judge), through the graders runevals uses; the replaced gradings are kept "
        "in history. Only judge and transcript assertions can be regraded: command and diff "
        "checks need the run's task folder, which an import does not keep. ITERATION is "
        "evalsite's number or the source's label."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("skill")
        parser.add_argument("iteration")
        parser.add_argument(
            "--only-missing",
            action="store_true",
            help="grade only the runs that have no grading; leave graded runs alone",
        )
        parser.add_argument(
            "--judge-model",
            help="the judge for assertions that name none (default: the iteration's judge, "
            "else EVALSITE_JUDGE_MODEL)",
        )
        parser.add_argument(
            "--assertion",
            metavar="ID",
            help="regrade only this assertion of each graded run (or __skill_invoked)",
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            iteration = find_iteration(
                skill=str(options["skill"]), iteration=str(options["iteration"])
            )
        except RegradeError as exc:
            raise CommandError(str(exc)) from None
        # Without a key there is no client: the workflow refuses before any call if a judge
        # would be asked.
        client = anthropic_client() if api_key() else None
        quiet = options["verbosity"] == 0
        try:
            with CommandProgress(self.stdout, minimum=PROGRESS_THRESHOLD, lines=not quiet) as shown:
                report = regrade_iteration(
                    iteration=iteration,
                    only_missing=bool(options["only_missing"]),
                    judge_model=options["judge_model"] or None,
                    assertion_id=options["assertion"] or None,
                    client=client,
                    progress=None if quiet else shown.step,
                )
        except (JudgeNeeded, JudgeFailed) as exc:
            raise CommandError(str(exc), returncode=COULD_NOT_RUN) from None
        except RegradeError as exc:
            raise CommandError(str(exc)) from None
        if options["verbosity"] > 0:
            self.stdout.write(report.summary())
            for note in report.notes:
                self.stdout.write(f"  {note}")
