"""Trigger evals: a skill's trigger iterations, one with its queries, and two compared."""

# No `from __future__ import annotations`: ninja and pydantic read these annotations at
# runtime to build the request parsers and the OpenAPI document.

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Query, Router, Schema

from accounts.auth import READ_AUTH

from ..models import Skill, TriggerIteration
from ..reading.triggers import (
    Summaries,
    TriggerComparison,
    compare_trigger_iterations,
    trigger_iteration_page,
    trigger_panel,
)
from ..warnings import messages
from .schemas import DeltaOut, IntervalOut

router = Router(tags=["triggers"], auth=READ_AUTH)


class EstimateOut(Schema):
    value: float
    n: int
    interval: IntervalOut | None


class TriggerSummaryOut(Schema):
    queries: int
    passed: int
    scored: int
    errors: int
    recall: EstimateOut | None
    false_trigger_rate: EstimateOut | None
    precision: EstimateOut | None
    f1: EstimateOut | None
    accuracy: EstimateOut | None


class SummariesOut(Schema):
    all: TriggerSummaryOut
    train: TriggerSummaryOut | None
    test: TriggerSummaryOut | None


class TriggerIterationOut(Schema):
    number: int
    label: str
    source_format: str
    description: str
    description_recorded: bool
    loop_step: int | None
    is_best: bool
    threshold: float
    runs_per_query: int | None
    generated_at: datetime | None
    validity_warnings: list[str]
    summaries: SummariesOut


class QueryOut(Schema):
    query: str
    should_trigger: bool
    expected_skill: str
    split: str
    triggers: int | None
    runs: int | None
    trigger_rate: float | None
    interval: IntervalOut | None
    passed: bool | None
    errors: int
    loaded: dict[str, int] | None


class TriggerDetailOut(TriggerIterationOut):
    queries: list[QueryOut]
    confusion: list[dict[str, Any]]


class TriggerFlipOut(Schema):
    query: str
    should_trigger: bool
    before: float
    after: float
    fixed: bool


class TriggerCompareOut(Schema):
    before: int
    after: int
    verdict: str
    delta: DeltaOut | None
    flips: list[TriggerFlipOut]
    before_summary: TriggerSummaryOut
    after_summary: TriggerSummaryOut


def _iteration(iteration: TriggerIteration, summaries: Summaries) -> dict[str, Any]:
    return {
        **{
            name: getattr(iteration, name)
            for name in (
                *("number", "label", "source_format", "description", "description_recorded"),
                *("loop_step", "is_best", "threshold", "runs_per_query", "generated_at"),
            )
        },
        "validity_warnings": messages(iteration.validity_warnings),
        "summaries": summaries,
    }


@router.get(
    "/skills/{skill}/triggers",
    response=list[TriggerIterationOut],
    summary="The skill's trigger iterations, oldest first, each description with its rates",
    operation_id="runs_api_trigger_iterations",
)
def trigger_iterations(request: HttpRequest, skill: str) -> list[dict[str, Any]]:
    panel = trigger_panel(Skill.objects.get_by_name_or_404(skill))
    return [_iteration(row.iteration, row.summaries) for row in panel.rows]


@router.get(
    "/skills/{skill}/triggers/{number}",
    response=TriggerDetailOut,
    summary="One trigger iteration: its queries, their rates and verdicts, the confusion matrix",
    operation_id="runs_api_trigger_iteration",
)
def trigger_iteration(request: HttpRequest, skill: str, number: int) -> dict[str, Any]:
    page = trigger_iteration_page(TriggerIteration.objects.get_by_address_or_404(skill, number))
    queries = [
        {
            **{
                name: getattr(row.query, name)
                for name in ("query", "should_trigger", "expected_skill", "split")
            },
            **{name: getattr(row.query, name) for name in ("triggers", "runs", "errors", "loaded")},
            "trigger_rate": row.outcome.trigger_rate,
            "interval": row.outcome.interval(),
            "passed": row.passed,
        }
        for row in page.rows
    ]
    confusion = [
        {"expected": expected, "loaded": loaded, "runs": runs}
        for (expected, loaded), runs in sorted(page.confusion.items())
    ]
    return {
        **_iteration(page.iteration, page.summaries),
        "queries": queries,
        "confusion": confusion,
    }


class TriggerCompareQuery(Schema):
    a: int
    b: int


@router.get(
    "/skills/{skill}/triggers-compare",
    response=TriggerCompareOut,
    summary="Two descriptions compared query by query (b − a), with the flips",
    operation_id="runs_api_trigger_compare",
)
def trigger_compare(
    request: HttpRequest, skill: str, query: Query[TriggerCompareQuery]
) -> dict[str, Any]:
    before = TriggerIteration.objects.get_by_address_or_404(skill, query.a)
    after = TriggerIteration.objects.get_by_address_or_404(skill, query.b)
    comparison: TriggerComparison = compare_trigger_iterations(before, after)
    delta = comparison.delta
    return {
        "before": before.number,
        "after": after.number,
        "verdict": comparison.verdict,
        "delta": None
        if delta is None
        else {
            "treatment": f"#{after.number}",
            "control": f"#{before.number}",
            **{k: getattr(delta, k) for k in ("mean", "n", "se", "interval", "p_value")},
            "signal": delta.signal,
        },
        "flips": comparison.flips,
        "before_summary": comparison.before_summary,
        "after_summary": comparison.after_summary,
    }
