"""One iteration's runs and assertion results as `runs.stats` reads them: rows and counts.

Summaries (`reading.summaries`) come from grouped cells; these are the reads that go down
to runs and results, for the iteration and compare pages and the benchmark.json.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Count, F, IntegerField, QuerySet, Sum
from django.db.models.functions import Cast, Coalesce

from .. import stats
from ..models import AssertionResult, Iteration, Run


def run_samples(iteration: Iteration) -> list[dict[str, Any]]:
    """The iteration's runs as `RunSample` rows; errored runs have no pass rate."""
    rows = list(Run.objects.filter(iteration=iteration).samples())
    for row in rows:
        row["condition"] = row.pop("condition__name")
        if row["status"] == "errored":
            row["pass_rate"] = None
    return rows


def assertion_outcomes(
    iterations: Iterable[Iteration], runs: Iterable[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Every substantive assertion result of the iterations, as `AssertionOutcome` rows.

    `passed` is the reviewer's override where there is one: overrides count in every statistic.
    Errored runs' results are left out: given the iterations' `run_samples` rows as `runs`,
    by those, so that the query reads only indexes (a run's status lies after its
    conversation in the row, and a comparison reads thousands of results).
    """
    results = AssertionResult.objects.filter(
        grading__run__iteration__in=list(iterations), is_meta=False
    )
    if runs is None:
        results = results.exclude(grading__run__status="errored")
    rows = outcome_rows(results.order_by())
    if runs is not None:
        errored = {
            (run["iteration_id"], run["eval_id"], run["condition"], run["run_index"])
            for run in runs
            if run["status"] == "errored"
        }
        if errored:
            rows = [
                row
                for row in rows
                if (row["iteration_id"], row["eval_id"], row["condition"], row["run_index"])
                not in errored
            ]
    return rows


def outcome_rows(results: QuerySet[AssertionResult]) -> list[dict[str, Any]]:
    """`results` as `AssertionOutcome` rows, in their order: the run's keys, and as `passed`
    the reviewer's override where there is one (overrides count in every statistic)."""
    rows = list(
        results.values(
            "assertion_id",
            "passed",
            "override_passed",
            iteration_id=F("grading__run__iteration_id"),
            eval_id=F("grading__run__eval_id"),
            condition=F("grading__run__condition__name"),
            run_index=F("grading__run__run_index"),
        )
    )
    for row in rows:
        override = row.pop("override_passed")
        if override is not None:
            row["passed"] = override
    return rows


def assertion_tallies(iteration: Iteration) -> list[stats.AssertionTally]:
    """`stats.assertion_tallies(assertion_outcomes([iteration]))`, counted by the database.

    One GROUP BY per (condition, eval, assertion) instead of a row per result: a 300-eval
    iteration has 36,000 results and 1,800 tallies, and reading the results one by one was
    most of its page's first view. Overrides count, errored runs do not, as there.
    """
    verdict = Cast(Coalesce("override_passed", "passed"), IntegerField())
    rows = (
        AssertionResult.objects.filter(grading__run__iteration=iteration, is_meta=False)
        .exclude(grading__run__status="errored")
        .order_by()
        .values_list("grading__run__condition__name", "grading__run__eval_id", "assertion_id")
        .annotate(passed=Sum(verdict), runs=Count("pk"))
    )
    return [stats.AssertionTally(c, e, a, int(p), n) for c, e, a, p, n in sorted(rows)]


def passing_runs(iteration: Iteration) -> dict[tuple[str, str], int]:
    """(eval id, condition) → its graded runs that passed every assertion (for pass@k)."""
    rows = (
        Run.objects.filter(iteration=iteration, grading__pass_rate__gte=1)
        .exclude(status="errored")
        .order_by()
        .values_list("eval_id", "condition__name")
        .annotate(passing=Count("id"))
    )
    return {(eval_id, condition): n for eval_id, condition, n in rows}
