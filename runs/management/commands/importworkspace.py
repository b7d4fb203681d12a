"""`manage.py importworkspace PATH…`: import result folders or archives into the database."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.importing import ImportFailure, import_history, import_workspace
from runs.management.progress import PROGRESS_THRESHOLD, CommandProgress
from runs.models import Iteration
from runs.reporting.files import add_report_arguments, check_report_arguments, write_reports


class Command(BaseCommand):
    help = (
        "Import eval results: eval-magic iteration folders or workspace roots, promoted "
        "baselines, skill-creator workspaces, skill folders, or .zip/.tar.gz archives of them."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Print the plan (each skill, the iterations it gets and the folders they "
            "come from, and every folder with results left out, with the reason), validate "
            "everything and report what would change, then roll everything back.",
        )
        parser.add_argument(
            "--keep-going",
            action="store_true",
            help="Import each valid iteration in its own transaction, list each rejected one "
            "with its error, and exit 1 if any was rejected (default: all or nothing).",
        )
        parser.add_argument(
            "--history",
            action="store_true",
            help="Each PATH is a git clone or a folder in one: import every promoted baseline "
            "campaign and committed iteration in its history, one iteration per campaign, "
            "with its commit as provenance.",
        )
        # For every iteration the import created or updated (none in a dry run).
        add_report_arguments(parser.add_argument_group("CI output"))

    def handle(
        self,
        *args: object,
        paths: list[Path],
        dry_run: bool,
        keep_going: bool,
        history: bool,
        **options: object,
    ) -> None:
        check_report_arguments(options)
        importer = import_history if history else import_workspace
        quiet = options["verbosity"] == 0
        with CommandProgress(self.stdout, minimum=PROGRESS_THRESHOLD, lines=not quiet) as shown:
            try:
                report = importer(
                    paths,
                    dry_run=dry_run,
                    keep_going=keep_going,
                    progress=None if quiet else shown.step,
                )
            except ImportFailure as exc:
                raise CommandError(exc.message) from None
        if not quiet:
            if dry_run:
                self.stdout.write("Plan:")
                for line in report.plan():
                    self.stdout.write(line)
            self.stdout.write(report.summary())
            for line in report.details():
                self.stdout.write(f"  {line}")
        if not dry_run:
            written = Iteration.objects.select_related("skill").in_bulk(report.written)
            write_reports(
                [written[pk] for pk in dict.fromkeys(report.written)], options, self.stdout
            )
        if report.rejected:
            raise CommandError(f"{len(report.rejected)} rejected: {report.rejected[0]}")
