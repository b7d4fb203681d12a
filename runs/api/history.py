"""An eval's history: the eval across every iteration of its skill, as its page shows it."""

# No `from __future__ import annotations`: ninja and pydantic read these annotations at
# runtime to build the request parsers and the OpenAPI document.

from datetime import datetime
from typing import Any

from django.http import Http404, HttpRequest
from django.urls import reverse
from ninja import Router, Schema
from pydantic import Field

from accounts.auth import READ_AUTH

from ..models import Skill
from ..names import address, findable
from ..reading.history import EvalHistory
from ..reading.history import eval_history as read_history
from .schemas import IntervalOut

router = Router(tags=["results"], auth=READ_AUTH)


class EstimateOut(Schema):
    """A mean with its 95% interval; no interval (null) from fewer than two runs a side."""

    mean: float = Field(alias="value")
    n: int
    se: float | None
    interval: IntervalOut | None


class HistoryConditionOut(Schema):
    name: str
    role: str
    runs: int
    graded: int
    errored: int
    #: Graded runs that passed every assertion.
    passing: int
    #: The mean pass rate of the graded runs, with an interval over the runs.
    score: EstimateOut | None


class AssertionCountOut(Schema):
    assertion_id: str
    role: str
    condition: str
    passed: int
    runs: int
    #: "fixed" or "broke" since the previous iteration that ran the eval; null otherwise.
    flip: str | None


class DefinitionChangeOut(Schema):
    parts: list[str]
    added: list[str]
    removed: list[str]
    rewritten: list[str]


class HistoryIterationOut(Schema):
    number: int = Field(alias="iteration.number")
    label: str = Field(alias="iteration.label")
    generated_at: datetime | None = Field(alias="iteration.generated_at")
    #: False: this iteration did not run the eval (and every other field is empty).
    present: bool
    #: The definition version its runs used (sha256 of the definition).
    fingerprint: str | None
    conditions: list[HistoryConditionOut]
    treatment: str | None
    control: str | None
    #: treatment − control of the mean run pass rates, Welch interval over the runs.
    delta: EstimateOut | None
    assertions: list[AssertionCountOut]
    #: What changed in the definition since `previous`; null when nothing did.
    definition_change: DefinitionChangeOut | None
    #: The number of the iteration before it that ran the eval.
    previous: int | None
    #: The iteration's eval page; null where it did not run the eval.
    url: str | None

    @staticmethod
    def resolve_fingerprint(row: Any) -> str | None:
        return row.definition.fingerprint if row.definition else None

    @staticmethod
    def resolve_treatment(row: Any) -> str | None:
        return row.treatment.name if row.treatment else None

    @staticmethod
    def resolve_control(row: Any) -> str | None:
        return row.control.name if row.control else None

    @staticmethod
    def resolve_assertions(row: Any) -> list[dict[str, Any]]:
        return [
            {
                "assertion_id": assertion_id,
                "role": role,
                "condition": cell.condition,
                "passed": cell.passed,
                "runs": cell.runs,
                "flip": cell.flip or None,
            }
            for role, cells in row.assertions.items()
            for assertion_id, cell in cells.items()
        ]

    @staticmethod
    def resolve_definition_change(row: Any) -> Any:
        return row.change

    @staticmethod
    def resolve_previous(row: Any) -> int | None:
        return row.previous.number if row.previous else None

    @staticmethod
    def resolve_url(row: Any) -> str | None:
        if not row.present:
            return None
        iteration = row.iteration
        return address(
            lambda: reverse("runs:eval", args=[iteration.skill.name, iteration.number, row.eval_id])
        )


class EvalHistoryOut(Schema):
    skill: str = Field(alias="skill.name")
    eval_id: str
    #: What a person reads: the latest definition's name, else the id.
    name: str
    #: Every assertion id graded in any iteration, as the definitions list them.
    assertion_ids: list[str]
    #: Newest first, as the page lists them; absent iterations included.
    iterations: list[HistoryIterationOut] = Field(alias="rows")
    #: The history page.
    url: str | None

    @staticmethod
    def resolve_url(history: Any) -> str | None:
        return address(
            lambda: reverse("runs:eval_history", args=[history.skill.name, history.eval_id])
        )


@router.get(
    "/skills/{skill}/evals/{eval_id}/history",
    response=EvalHistoryOut,
    summary="One eval across every iteration: scores, delta, assertion counts, flips, "
    "definition changes",
    operation_id="runs_api_eval_history",
)
def eval_history(request: HttpRequest, skill: str, eval_id: str) -> EvalHistory:
    found = Skill.objects.get_by_name_or_404(skill)
    result = read_history(found, eval_id) if findable(eval_id) else None
    if result is None:
        raise Http404(f"No iteration of {found.name} ran an eval “{eval_id}”.")
    return result
