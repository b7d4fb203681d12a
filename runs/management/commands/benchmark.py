"""`manage.py benchmark SKILL ITERATION`: eval-magic's benchmark.json, recomputed."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.models import Iteration, IterationNotFound
from runs.reading.benchmark import eval_magic_benchmark


class Command(BaseCommand):
    help = (
        "Print an iteration's benchmark.json as eval-magic computes it (SPEC 4.1), from the "
        "gradings in the database. ITERATION is evalsite's number or the source's label."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("skill")
        parser.add_argument("iteration")

    def handle(self, *args: object, skill: str, iteration: str, **options: object) -> None:
        try:
            found = Iteration.objects.named(skill, iteration)
        except IterationNotFound as exc:
            raise CommandError(str(exc)) from None
        try:
            benchmark = eval_magic_benchmark(found)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps(benchmark, indent=2, ensure_ascii=False))
        if found.recorded_aggregates:
            # A promoted baseline's gradings carry no timing: say where the figures are.
            self.stderr.write(
                "note: duration_ms and total_tokens are n: 0 because this iteration's runs "
                "carry no timing; its recorded benchmark.json has them (see the admin)."
            )
