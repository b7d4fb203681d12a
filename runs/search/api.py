"""The search API: `GET /api/search?q=` over every skill, `GET /api/skills/{skill}/search?q=`."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from pydantic import Field

from accounts.auth import READ_AUTH
from runs.models import Skill

from .models import Outcome
from .query import QueryError, parse_query
from .searching import MAX_COUNTED, Filters, Hit, search

router = Router(tags=["search"], auth=READ_AUTH)


class SearchIn(Schema):
    q: str = Field(..., description='Words, "a phrase", -leave-out, prefix* (README: Search)')
    condition: str = ""
    outcome: Outcome | None = Field(None, description="pass: every assertion passed; fail")
    limit: int = Field(20, ge=1, le=100)
    offset: int = Field(0, ge=0, le=100_000)


class SkillSearchIn(SearchIn):
    iteration: int | None = Field(None, ge=1, le=2**31 - 1)


class HitOut(Schema):
    skill: str
    iteration: int
    eval_id: str
    condition: str
    run_index: int
    found_in: str
    event: int | None
    #: HTML: the text escaped, each match in <mark>.
    snippet: str
    url: str


class SearchOut(Schema):
    #: Runs that match, counted up to 1,000; `more` when there are more than that.
    count: int
    more: bool
    #: Newest first.
    items: list[HitOut]
    #: Iterations in scope still being indexed ("skill #n"): their runs may be missing.
    indexing: list[str] = Field(
        default_factory=list,
        description="Iterations whose runs are not all searchable yet (still indexing)",
    )


class ErrorOut(Schema):
    detail: str


def _out(hit: Hit) -> dict[str, Any]:
    run = hit.run
    return {
        "skill": run.iteration.skill.name,
        "iteration": run.iteration.number,
        "eval_id": run.eval_id,
        "condition": run.condition.name,
        "run_index": run.run_index,
        "found_in": hit.found_in,
        "event": hit.event,
        "snippet": str(hit.snippet),
        "url": hit.url,
    }


def _answer(params: SearchIn, filters: Filters) -> Status:
    try:
        query = parse_query(params.q)
    except QueryError as exc:
        return Status(400, {"detail": str(exc)})
    results = search(query, filters, offset=params.offset, limit=params.limit)
    count = min(results.count, MAX_COUNTED)
    items = [_out(hit) for hit in results.hits]
    body = {"count": count, "more": results.capped, "items": items, "indexing": results.indexing}
    return Status(200, body)


@router.get(
    "/search",
    response={200: SearchOut, 400: ErrorOut},
    summary="Search every skill's runs: prompts, final messages, evidence, notes, conversations",
)
def search_everything(request: HttpRequest, params: Query[SearchIn]) -> Any:
    return _answer(params, Filters(condition=params.condition, outcome=params.outcome or ""))


@router.get(
    "/skills/{skill}/search",
    response={200: SearchOut, 400: ErrorOut},
    summary="Search one skill's runs",
)
def search_skill(request: HttpRequest, skill: str, params: Query[SkillSearchIn]) -> Any:
    found = Skill.objects.get_by_name_or_404(skill)
    filters = Filters(
        skill_id=found.pk,
        iteration_number=params.iteration,
        condition=params.condition,
        outcome=params.outcome or "",
    )
    return _answer(params, filters)
