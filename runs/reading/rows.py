"""The grouped reads behind every iteration summary: each query beside its row's columns.

Each query is built for a list of primary keys and fetched raw (`fetch`), without Django's
per-value converters: these are plain counts, sums, names and flags, and on 1,000+ rows the
converters cost more than the query. A row comes back as the named tuple defined beside
its query, whose fields are the query's columns in order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

from django.db import connection
from django.db.models import Count, Q, QuerySet, Sum

from ..models import Condition, EvalCase, Run, RunStatus


class CellRow(NamedTuple):
    """One (iteration, condition, eval definition) of `cell_aggregates`: counts and sums."""

    iteration_id: int
    condition_id: int
    eval_id: str
    eval_case_id: int
    runs: int
    graded: int
    pass_sum: float | None
    errored: int
    zero_assertions: int
    invoked: int
    invocation_n: int
    called: int
    called_n: int
    tokens_sum: int | None
    tokens_n: int
    duration_sum: int | None
    duration_n: int
    #: Over the runs whose tokens are known by kind (priced_n of them): what prices them.
    input_sum: int | None
    output_sum: int | None
    cache_write_sum: int | None
    cache_read_sum: int | None
    priced_n: int


def cell_aggregates(iteration_ids: list[int]) -> QuerySet:
    """Per (iteration, condition, eval): run and grading counts, pass-rate, cost sums.

    One GROUP BY over runs joined to their gradings, as tuples in CellRow's order; errored
    runs count as runs but never in pass rates. The condition's and eval's own attributes
    are not grouped on: the caller fetches them once each. A covering index on runs
    (`Run.Meta.indexes`) keeps this off the transcripts' pages.
    """
    # Aggregates over a grading's columns skip runs without one (LEFT JOIN NULLs), and
    # COUNT(column) counts non-null values: fewer conditions to evaluate on every row.
    counted = ~Q(status=RunStatus.ERRORED)
    return (
        Run.objects.filter(iteration_id__in=iteration_ids)
        .order_by()
        .values("iteration_id", "condition_id", "eval_id", "eval_case_id")
        .annotate(
            runs=Count("id"),
            graded=Count("grading", filter=counted),
            pass_sum=Sum("grading__pass_rate", filter=counted),
            errored=Count("id", filter=Q(status=RunStatus.ERRORED)),
            zero_assertions=Count("grading", filter=counted & Q(grading__total=0)),
            invoked=Count("id", filter=Q(grading__skill_invoked=True)),
            invocation_n=Count("grading__skill_invoked"),
            called=Count("id", filter=Q(skill_called=True)),
            called_n=Count("skill_called"),
            tokens_sum=Sum("total_tokens"),
            tokens_n=Count("total_tokens"),
            duration_sum=Sum("duration_ms"),
            duration_n=Count("duration_ms"),
            input_sum=Sum("input_tokens"),
            output_sum=Sum("output_tokens"),
            cache_write_sum=Sum("cache_write_tokens"),
            cache_read_sum=Sum("cache_read_tokens"),
            priced_n=Count("input_tokens"),
        )
        .values_list(*CellRow._fields)
    )


class ConditionRow(NamedTuple):
    """A condition's own attributes, fetched once rather than in every cell row."""

    pk: int
    name: str
    role: str
    loads_skill: bool
    position: int


def conditions_of(iteration_ids: list[int]) -> QuerySet:
    """The conditions of the iterations, as ConditionRow tuples."""
    # No ORDER BY: the caller looks rows up by id.
    return (
        Condition.objects.filter(iteration_id__in=iteration_ids)
        .order_by()
        .values_list(*ConditionRow._fields)
    )


class CaseRow(NamedTuple):
    """An eval definition's trigger expectation and weight."""

    pk: int
    skill_should_trigger: bool
    weight: float


def cases_of(case_ids: list[int]) -> QuerySet:
    """The eval definitions, as CaseRow tuples."""
    return EvalCase.objects.filter(pk__in=case_ids).order_by().values_list(*CaseRow._fields)


Row = TypeVar("Row", bound=tuple[Any, ...])


def fetch(row: type[Row], build: Callable[[list[int]], QuerySet], ids: Iterable[int]) -> list[Row]:
    """The rows of build(ids) as `row` tuples, without Django's per-value converters."""
    ids = list(ids)
    if not ids:
        return []
    compiled = _compiled(build, connection.vendor, len(ids))
    if compiled is None:
        sql, params = build(ids).query.sql_with_params()
    else:
        sql, params = compiled[0], (*compiled[1], *ids)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(map(row._make, cursor.fetchall()))  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=256)
def _compiled(
    build: Callable[[list[int]], QuerySet], vendor: str, count: int
) -> tuple[str, tuple[Any, ...]] | None:
    """The SQL of build(ids) for `count` ids and its params before the ids, or None.

    Building and compiling the cell aggregates' queryset costs a third of running it on
    SQLite, and the SQL depends only on how many ids there are. The page cache does not
    make this unneeded: every page's first view after an import or a review computes its
    summaries, and bench/stats_bench.py (which measures them uncached) is 3.6x its floor
    on SQLite without it, against a target of 3x. Stand-in ids (no primary key is
    negative) show where the ids go; when they are not the trailing params, the caller
    compiles each time instead.
    """
    stand_ins = list(range(-count, 0))
    sql, params = build(stand_ins).query.sql_with_params()
    lead = len(params) - count
    if list(params[lead:]) != stand_ins:
        return None
    return sql, tuple(params[:lead])
