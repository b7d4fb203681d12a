"""The JSON API's review endpoints: notes on runs and overrides of assertion results.

A review that cannot be recorded raises ReviewError, which the API's exception handler
answers with a 400 and its one-line reason.
"""

# No `from __future__ import annotations`: ninja and pydantic read these annotations at
# runtime to build the request parsers and the OpenAPI document.

from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status

from accounts.auth import WRITE_AUTH
from runs.api.schemas import ErrorOut, ReviewOut
from runs.models import AssertionResult, Review, Run

from .reviewing import ReviewError, add_note, override

router = Router(tags=["review"], auth=WRITE_AUTH)


class ReviewIn(Schema):
    """A note (`text` alone), or an override: `assertion_id` and `passed` with the reason."""

    text: str
    assertion_id: str | None = None
    passed: bool | None = None


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
    return Status(201, _review(found, body, author=request.user))


def _review(run: Run, body: ReviewIn, *, author: Any) -> Review:
    """The note or override `body` asks for, recorded; ReviewError (a 400) when it cannot be."""
    if body.assertion_id is None:
        if body.passed is not None:
            raise ReviewError("passed: an override needs the assertion_id it overrides")
        return add_note(run=run, author=author, text=body.text)
    if body.passed is None:
        raise ReviewError("passed: an override needs the verdict (true or false)")
    result = get_object_or_404(
        AssertionResult, grading__run=run, assertion_id=body.assertion_id, is_meta=False
    )
    return override(result=result, author=author, passed=body.passed, reason=body.text).review
