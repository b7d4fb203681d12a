"""Downloads as CSV or JSON: the matrix, an iteration's runs, an eval's table, the trend.

The same tables as the pages' "Download CSV" links (`runs.reading.exports`), with the
same filters, for a token or a session, as every read of the API.
"""

# No `from __future__ import annotations`: ninja and pydantic read these annotations at
# runtime to build the request parsers and the OpenAPI document.

from typing import Literal

from django.http import Http404, HttpRequest, HttpResponse
from ninja import Query, Router, Schema
from pydantic import Field

from accounts.auth import READ_AUTH

from ..exporting import download_response
from ..models import Iteration, Skill
from ..names import findable
from ..reading.exports import MatrixChoice, eval_table, matrix_table, runs_table, trend_table
from ..reading.iteration import DEFAULT_SORT, FILTERS, MOVEMENTS

router = Router(tags=["exports"], auth=READ_AUTH)

Format = Literal["csv", "json"]
#: What the OpenAPI document says of every download: an attachment, CSV or JSON.
DOWNLOAD = {
    "responses": {
        200: {
            "description": "An attachment: CSV (UTF-8, a header row) or JSON (columns, rows)",
            "content": {"text/csv": {}, "application/json": {}},
        }
    }
}
MOVEMENT_CHOICES = Literal["", *MOVEMENTS]  # type: ignore[valid-type]
FILTER_CHOICES = Literal[FILTERS]  # type: ignore[valid-type]


class MatrixQuery(Schema):
    """The iteration page's matrix filters and order (all rows: no paging)."""

    tag: str = ""
    only: list[FILTER_CHOICES] = Field(default_factory=list)
    change: MOVEMENT_CHOICES = ""
    sort: str = Field(DEFAULT_SORT, max_length=200)

    def choice(self) -> MatrixChoice:
        return MatrixChoice(
            tag=self.tag, only=frozenset(self.only), movement=self.change, sort=self.sort
        )


class RunsQuery(MatrixQuery):
    eval_id: str = ""
    condition: str = ""


@router.get(
    "/skills/{skill}/trend.{fmt}",
    openapi_extra=DOWNLOAD,
    summary="The trend as CSV or JSON: a row per iteration × condition, oldest first",
    operation_id="runs_api_trend_export",
)
def trend_export(request: HttpRequest, skill: str, fmt: Format) -> HttpResponse:
    return download_response(trend_table(Skill.objects.get_by_name_or_404(skill)), fmt)


@router.get(
    "/skills/{skill}/iterations/{number}/matrix.{fmt}",
    openapi_extra=DOWNLOAD,
    summary="The eval × condition matrix as CSV or JSON, filtered and sorted, every row",
    operation_id="runs_api_matrix_export",
)
def matrix_export(
    request: HttpRequest, skill: str, number: int, fmt: Format, query: Query[MatrixQuery]
) -> HttpResponse:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    return download_response(matrix_table(iteration, query.choice()), fmt)


@router.get(
    "/skills/{skill}/iterations/{number}/runs.{fmt}",
    openapi_extra=DOWNLOAD,
    summary="The iteration's runs as CSV or JSON: a row per run",
    operation_id="runs_api_runs_export",
)
def runs_export(
    request: HttpRequest, skill: str, number: int, fmt: Format, query: Query[RunsQuery]
) -> HttpResponse:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    if not (findable(query.eval_id) and findable(query.condition)):
        raise Http404("No run has that eval id or condition.")
    table = runs_table(
        iteration, eval_id=query.eval_id, condition=query.condition, choice=query.choice()
    )
    return download_response(table, fmt)


@router.get(
    "/skills/{skill}/iterations/{number}/evals/{eval_id}/summary.{fmt}",
    openapi_extra=DOWNLOAD,
    summary="One eval's table as CSV or JSON: a row per condition × assertion",
    operation_id="runs_api_eval_export",
)
def eval_export(
    request: HttpRequest, skill: str, number: int, eval_id: str, fmt: Format
) -> HttpResponse:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    if not (findable(eval_id) and iteration.runs.filter(eval_id=eval_id).exists()):
        raise Http404(f"Iteration #{iteration.number} of {skill} has no eval “{eval_id}”.")
    return download_response(eval_table(iteration, eval_id), fmt)
