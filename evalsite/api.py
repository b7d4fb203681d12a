"""The JSON API (`/api/`, OpenAPI document at `/api/openapi.json`, docs at `/api/docs`)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from ninja import NinjaAPI
from ninja.errors import AuthenticationError

from accounts.auth import docs_access
from grading.api import router as review_router
from grading.reviewing import ReviewError
from runs.api import router as results_router
from runs.importing import ImportFailure, UploadTooLarge
from runs.models import NumberMoved
from runs.search.api import router as search_router
from runs.views.moved import moved_address

api = NinjaAPI(
    title="evalsite",
    version="1",
    description=(
        "Skills, iterations with their statistics and verdicts, runs with gradings, "
        "comparisons and trends: the numbers the pages show. Authenticate with "
        "`Authorization: Bearer <token>` (create one on your account page)."
    ),
    urls_namespace="api",
    docs_decorator=docs_access,
)
api.add_router("/", results_router)
api.add_router("/", review_router)
api.add_router("/", search_router)


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc) or "Not found"}, status=404)


@api.exception_handler(NumberMoved)
def moved(request: HttpRequest, exc: NumberMoved) -> HttpResponse:
    """An old number: the same endpoint under the number its results answer to now."""
    return HttpResponsePermanentRedirect(moved_address(request, exc))


@api.exception_handler(ImportFailure)
def import_failed(request: HttpRequest, exc: ImportFailure) -> HttpResponse:
    """Nothing was imported: the importer's one-line error, 413 for an upload too large."""
    status = 413 if isinstance(exc, UploadTooLarge) else 400
    return api.create_response(request, {"detail": exc.message}, status=status)


@api.exception_handler(ReviewError)
def review_refused(request: HttpRequest, exc: ReviewError) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc)}, status=400)


@api.exception_handler(AuthenticationError)
def unauthorised(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = api.create_response(
        request,
        {"detail": "authentication required: send Authorization: Bearer <API token>"},
        status=401,
    )
    response["WWW-Authenticate"] = "Bearer"
    return response
