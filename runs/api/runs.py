"""The runs of an iteration, with their gradings, evidence, reviews and conversations."""

# No `from __future__ import annotations`: ninja and pydantic read these annotations at
# runtime to build the request parsers and the OpenAPI document.

from django.http import HttpRequest
from ninja import Query, Router, Schema
from ninja.pagination import paginate

from accounts.auth import READ_AUTH

from ..models import Iteration, Run
from ..models.runs import RunQuerySet
from ..names import findable
from .pagination import Pagination
from .schemas import RunDetailOut, RunOut

router = Router(tags=["results"], auth=READ_AUTH)


class RunFilter(Schema):
    eval_id: str | None = None
    condition: str | None = None


@router.get(
    "/skills/{skill}/iterations/{number}/runs",
    response=list[RunOut],
    summary="The iteration's runs with their gradings (conversations left out)",
    operation_id="runs_api_list_runs",
)
@paginate(Pagination)
def list_runs(
    request: HttpRequest, skill: str, number: int, filters: Query[RunFilter]
) -> RunQuerySet:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    runs = (
        Run.objects.filter(iteration=iteration)
        .select_related("condition", "grading", "iteration__skill")
        .prefetch_related("grading__results", "reviews__author")
        .defer("conversation", "tool_invocations", "artifacts")
        .order_by("eval_id", "condition__position", "run_index")
    )
    if filters.eval_id:
        runs = runs.filter(eval_id=filters.eval_id)
    if filters.condition:
        runs = runs.filter(condition__name=filters.condition)
    if not all(findable(value or "") for value in (filters.eval_id, filters.condition)):
        runs = runs.none()
    return runs


@router.get(
    "/skills/{skill}/iterations/{number}/runs/{eval_id}/{condition}/{run}",
    response=RunDetailOut,
    summary="One run with its grading, evidence and conversation",
    operation_id="runs_api_run_detail",
)
def run_detail(
    request: HttpRequest, skill: str, number: int, eval_id: str, condition: str, run: int
) -> Run:
    return Run.objects.get_by_address_or_404(skill, number, eval_id, condition, run)
