"""Importing an uploaded archive (the API's POST /api/imports and the web upload form)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from .errors import ImportFailure
from .workspace import import_workspace
from .writer import ImportReport

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")


class UploadTooLarge(ImportFailure):
    """The upload is over EVALSITE_UPLOAD_MAX_BYTES; refused before it is opened."""


def import_upload(upload: UploadedFile, *, dry_run: bool = False) -> ImportReport:
    """Import an uploaded .zip / .tar.gz workspace archive: all of it, or nothing.

    Raises ImportFailure (UploadTooLarge for the size limit) with the one-line message, which
    names the upload as the client called it, never where it was saved.
    """
    name = Path(upload.name or "upload").name
    if not name.lower().endswith(ARCHIVE_SUFFIXES):
        raise ImportFailure("not a .zip or .tar.gz archive of a workspace", path=name)
    limit = settings.EVALSITE_UPLOAD_MAX_BYTES
    if upload.size is not None and upload.size > limit:
        raise UploadTooLarge(
            f"{upload.size} bytes is over the upload limit of {limit} bytes", path=name
        )
    folder = Path(tempfile.mkdtemp(prefix="evalsite-upload-"))
    try:
        path = folder / name
        with path.open("wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        try:
            return import_workspace([path], dry_run=dry_run)
        except ImportFailure as exc:
            exc.message = exc.message.replace(f"{folder}/", "")
            exc.args = (exc.message,)
            raise
    finally:
        shutil.rmtree(folder, ignore_errors=True)
