"""The JSON API's review endpoints: notes on runs and overrides of assertion results."""

# No `from __future__ import annotations`: ninja and pydantic read these annotations at
# runtime to build the request parsers and the OpenAPI document.

from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status

from accounts.auth import WRITE_AUTH
from runs.api import ReviewOut, review_out
from runs.models import Run

from .models import AssertionResult
from .reviewing import ReviewError, add_note, override

router = Router(tags=["review"], auth=WRITE_AUTH)


class ReviewIn(Schema):
    """A note (`text` alone), or an override: `assertion_id` and `passed` with the reason."""

    text: str
    assertion_id: str | None = None
    passed: bool | None = None


class ErrorOut(Schema):
    detail: str


@router.post(
    "/skills/{skill}/iterations/{number}/runs/{eval_id}/{condition}/{run}/reviews",
    response={201: ReviewOut, 400: ErrorOut},
    summary="Add a note to a run, or override one of its assertion results",
)
def create_review(
    request: HttpRequest,
    skill: str,
    number: int,
    eval_id: str,
    condition: str,
    run: int,
    body: ReviewIn,
) -> Any:
    found = Run.objects.get_by_address_or_404(skill, number, eval_id, condition, run)
    try:
        if body.assertion_id is None:
            if body.passed is not None:
                return Status(
                    400, {"detail": "passed: an override needs the assertion_id it overrides"}
                )
            review = add_note(run=found, author=request.user, text=body.text)
        else:
            if body.passed is None:
                return Status(
                    400, {"detail": "passed: an override needs the verdict (true or false)"}
                )
            result = get_object_or_404(
                AssertionResult, grading__run=found, assertion_id=body.assertion_id, is_meta=False
            )
            review = override(
                result=result, author=request.user, passed=body.passed, reason=body.text
            ).review
    except ReviewError as exc:
        return Status(400, {"detail": str(exc)})
    return Status(201, review_out(review))
