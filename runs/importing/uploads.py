"""Importing uploads: an archive (POST /api/imports, the web form) or loose files with their
relative paths (POST /api/imports/files)."""

from __future__ import annotations

import errno
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from .errors import ImportFailure
from .report import ImportReport
from .workspace import import_workspace

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")
_BAD_NAME_ERRORS = {errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL}


class UploadTooLarge(ImportFailure):
    """The upload is over EVALSITE_UPLOAD_MAX_BYTES; refused before it is opened."""


def import_upload(
    upload: UploadedFile, *, dry_run: bool = False, keep_going: bool = False
) -> ImportReport:
    """Import an uploaded .zip / .tar.gz workspace archive: all of it, or nothing (with
    `keep_going`, each valid iteration, the rejected ones listed in the report).

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
    with _upload_folder() as folder:
        path = folder / name
        _save(upload, path, shown=name)
        return _import_saved(path, folder, dry_run=dry_run, keep_going=keep_going)


def import_files(
    files: Sequence[tuple[str, UploadedFile]],
    *,
    dry_run: bool = False,
    keep_going: bool = False,
) -> ImportReport:
    """Import uploaded files placed at their relative paths, e.g. one iteration folder's files
    sent as `<skill>/iteration-3/conditions.json`, `<skill>/iteration-3/eval-a/…`.

    Paths must be relative and stay inside the upload (no `..`, no absolute paths, no
    backslashes); the total size and the number of files have the archive limits.
    """
    if not files:
        raise ImportFailure("no files uploaded", path="files")
    if len(files) > settings.EVALSITE_ARCHIVE_MAX_FILES:
        raise UploadTooLarge(
            f"{len(files)} files is over the limit of {settings.EVALSITE_ARCHIVE_MAX_FILES}",
            path="files",
        )
    total = sum(upload.size or 0 for _, upload in files)
    if total > settings.EVALSITE_UPLOAD_MAX_BYTES:
        raise UploadTooLarge(
            f"{total} bytes is over the upload limit of {settings.EVALSITE_UPLOAD_MAX_BYTES} bytes",
            path="files",
        )
    targets = _checked_targets([relative for relative, _ in files])
    with _upload_folder() as folder:
        for (relative, upload), target in zip(files, targets, strict=True):
            _save(upload, folder.joinpath(*target.parts), shown=relative)
        return _import_saved(folder, folder, dry_run=dry_run, keep_going=keep_going)


def _checked_targets(paths: list[str]) -> list[PurePosixPath]:
    """Each upload's path, checked before anything is written: one file per path, and no
    path both a file and the folder of another (`x` and `x/y`), which the disk cannot hold."""
    targets = [_safe_relative(relative) for relative in paths]
    files: dict[PurePosixPath, str] = {}
    for target, relative in zip(targets, paths, strict=True):
        if target in files:
            raise ImportFailure("the same path is uploaded twice", path=relative)
        files[target] = relative
    for target, relative in files.items():
        for folder in target.parents:
            if folder in files:
                raise ImportFailure(
                    f"uploaded as a file and also as the folder holding {relative!r}",
                    path=files[folder],
                )
    return targets


@contextmanager
def _upload_folder() -> Iterator[Path]:
    """A temporary folder for the upload's files, removed afterwards whatever happens."""
    folder = Path(tempfile.mkdtemp(prefix="evalsite-upload-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _save(upload: UploadedFile, path: Path, *, shown: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
    except OSError as error:
        # A name the file system refuses is the client's to fix; anything else (a full disk)
        # is the server's, and stays an error.
        if error.errno not in _BAD_NAME_ERRORS:
            raise
        raise ImportFailure(f"cannot save the upload: {error.strerror}", path=shown) from None


def _import_saved(path: Path, folder: Path, *, dry_run: bool, keep_going: bool) -> ImportReport:
    """Import what was saved; messages name files as the client sent them, never where the
    server saved them."""

    def as_sent(message: str) -> str:
        return message.replace(f"{folder}/", "").replace(str(folder), "upload")

    try:
        report = import_workspace([path], dry_run=dry_run, keep_going=keep_going)
    except ImportFailure as exc:
        exc.message = as_sent(exc.message)
        exc.args = (exc.message,)
        raise
    report.rejected = [as_sent(line) for line in report.rejected]
    report.unimported = [as_sent(line) for line in report.unimported]
    report.notes = [as_sent(line) for line in report.notes]
    return report


def _safe_relative(relative: str) -> PurePosixPath:
    path = PurePosixPath(relative)
    if (
        not relative
        or "\\" in relative
        or "\x00" in relative
        or path.is_absolute()
        or any(part in {"", ".", ".."} for part in relative.split("/"))
        or len(path.parts) > 32
    ):
        raise ImportFailure(
            "not a relative path inside the upload (no '..', no leading '/')", path=relative
        )
    return path
