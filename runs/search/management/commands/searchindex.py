"""manage.py searchindex: write every run's search document afresh, or finish pending ones.

Import, review and regrade keep the index exact on their own; a large import indexes its
iteration just after it commits, and `--pending` completes one whose process died before
that was done. Without it, every document is rebuilt: for a database that held runs
before the search app was installed, or after editing runs in the admin.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from runs.search.index import rebuild
from runs.search.pending import complete_pending


class Command(BaseCommand):
    help = "Rebuild the search index over every run (--pending: finish interrupted indexing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--pending",
            action="store_true",
            help="only index the iterations an import left still indexing",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["pending"]:
            done = complete_pending()
            self.stdout.write(
                f"search index completed for {done} iteration{'s' if done != 1 else ''}"
            )
            return
        indexed = rebuild()
        self.stdout.write(f"search index rebuilt: {indexed} run{'s' if indexed != 1 else ''}")
