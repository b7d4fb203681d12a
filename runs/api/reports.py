"""CI output through the API: an iteration's pull-request summary and its JUnit file.

The same files `runevals --summary/--junit` writes, for a workflow that uploads results
with `POST /imports` and reads these back (the import's response lists their addresses).
"""

# No `from __future__ import annotations`: ninja and pydantic read these annotations at
# runtime to build the request parsers and the OpenAPI document.

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Query, Router, Schema
from ninja.errors import HttpError

from accounts.auth import READ_AUTH
from accounts.models import ShareLink

from ..models import Iteration
from ..names import address
from ..reporting import iteration_outcomes, junit_xml, summary_markdown

router = Router(tags=["results"], auth=READ_AUTH)


def text_response(media_type: str) -> dict:
    """The OpenAPI answer of an endpoint that returns a file, not JSON."""
    content = {media_type: {"schema": {"type": "string"}}}
    return {"responses": {200: {"description": "OK", "content": content}}}


class SummaryQuery(Schema):
    #: The token of a share link (to the skill or this iteration) to put in the summary.
    share: str | None = None


def site_url(request: HttpRequest) -> str:
    """EVALSITE_SITE_URL, else this request's scheme and host."""
    return settings.EVALSITE_SITE_URL or request.build_absolute_uri("/").rstrip("/")


def share_url(request: HttpRequest, iteration: Iteration, token: str) -> str:
    """The share link `token` opening this iteration; HttpError 400 unless it can."""
    link = ShareLink.objects.find(token)
    here = iteration.get_absolute_url()
    if link is None or not link.opens(here):
        raise HttpError(400, "share: not an active share link to this iteration or its skill")
    address = reverse("share", args=[token])
    if link.path != here:
        address += "?" + urlencode({"to": here})
    return site_url(request) + address


@router.get(
    "/skills/{skill}/iterations/{number}/summary.md",
    openapi_extra=text_response("text/markdown"),
    summary="The pull-request summary (Markdown): verdict, delta, evals that moved, links",
    description=(
        "Its first line is a marker (`<!-- evalsite-summary skill=NAME -->`) to find the "
        "comment by and update it. With `share=<token>` of a share link to the skill or "
        "iteration, the summary links to it."
    ),
    operation_id="runs_api_iteration_summary",
    url_name="iteration_summary",
)
def iteration_summary(
    request: HttpRequest, skill: str, number: int, query: Query[SummaryQuery]
) -> HttpResponse:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    shares = {iteration.pk: share_url(request, iteration, query.share)} if query.share else {}
    outcomes = iteration_outcomes([iteration], share_urls=shares)
    text = summary_markdown(outcomes, base_url=site_url(request))
    return HttpResponse(text, content_type="text/markdown; charset=utf-8")


@router.get(
    "/skills/{skill}/iterations/{number}/junit.xml",
    openapi_extra=text_response("application/xml"),
    summary="JUnit XML: a test case per eval × condition (failed assertions, regressions, "
    "errored runs)",
    operation_id="runs_api_iteration_junit",
    url_name="iteration_junit",
)
def iteration_junit(request: HttpRequest, skill: str, number: int) -> HttpResponse:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    return HttpResponse(
        junit_xml(iteration_outcomes([iteration])), content_type="application/xml; charset=utf-8"
    )


def imported_iterations(pks: list[int]) -> list[dict[str, Any]]:
    """Each iteration an import wrote, in its order, with the addresses of its CI files."""
    found = Iteration.objects.select_related("skill").only("number", "label", "skill__name")
    by_pk = found.in_bulk(pks)
    rows = []
    for pk in dict.fromkeys(pks):
        iteration = by_pk[pk]
        args = [iteration.skill.name, iteration.number]
        rows.append(
            {
                "skill": iteration.skill.name,
                "number": iteration.number,
                "label": iteration.label,
                "url": address(iteration.get_absolute_url),
                "summary_url": address(lambda a=args: reverse("api:iteration_summary", args=a)),
                "junit_url": address(lambda a=args: reverse("api:iteration_junit", args=a)),
            }
        )
    return rows
