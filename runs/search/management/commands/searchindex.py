"""manage.py searchindex: write every run's search document afresh.

Import, review and regrade keep the index exact on their own; this is for a database that
held runs before the search app was installed, or after editing runs in the admin.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from runs.search.index import rebuild


class Command(BaseCommand):
    help = "Rebuild the search index over every run."

    def handle(self, *args: Any, **options: Any) -> None:
        indexed = rebuild()
        self.stdout.write(f"search index rebuilt: {indexed} run{'s' if indexed != 1 else ''}")
