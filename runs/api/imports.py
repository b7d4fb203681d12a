"""Imports through the API: a workspace archive, or one iteration folder's files.

An import that fails raises ImportFailure, which the API's exception handler answers
with a 400 (413 for an upload over the limit) and the importer's one-line error.
"""

# No `from __future__ import annotations`: ninja and pydantic read these annotations at
# runtime to build the request parsers and the OpenAPI document.

from django.http import HttpRequest
from ninja import File, Form, Router, Status
from ninja.files import UploadedFile

from accounts.auth import WRITE_AUTH

from ..importing import ImportFailure, ImportReport, import_files, import_upload
from .schemas import ErrorOut, ImportOut

router = Router(tags=["results"], auth=WRITE_AUTH)


@router.post(
    "/imports",
    response={201: ImportOut, 400: ErrorOut, 413: ErrorOut},
    summary="Import a workspace archive (.zip or .tar.gz): all of it, or nothing",
    description=(
        "With `keep_going=true`, each valid iteration is imported in its own transaction and "
        "each refused one is listed in `rejected` (the response is still 201)."
    ),
    operation_id="runs_api_create_import",
)
def create_import(
    request: HttpRequest, archive: File[UploadedFile], keep_going: Form[bool] = False
) -> Status[ImportReport]:
    return Status(201, import_upload(archive, keep_going=keep_going))


@router.post(
    "/imports/files",
    response={201: ImportOut, 400: ErrorOut, 413: ErrorOut},
    summary="Import one iteration folder's files: each file with its relative path",
    description=(
        "Multipart: `files` (repeated) and `paths` (repeated, same order), e.g. "
        "`my-skill/iteration-3/conditions.json`. An eval-magic iteration's skill is the "
        "folder above `iteration-N`. `keep_going=true` as for `POST /imports`."
    ),
    operation_id="runs_api_create_import_from_files",
)
def create_import_from_files(
    request: HttpRequest,
    files: File[list[UploadedFile]],
    paths: Form[list[str]],
    keep_going: Form[bool] = False,
) -> Status[ImportReport]:
    if len(paths) != len(files):
        raise ImportFailure(f"paths: {len(paths)} paths for {len(files)} files")
    pairs = list(zip(paths, files, strict=True))
    return Status(201, import_files(pairs, keep_going=keep_going))
