"""Importing uploads: an archive (POST /api/imports, the web form) or loose files with their
relative paths (POST /api/imports/files).

The web form previews first: the archive is staged (kept for EVALSITE_UPLOAD_STAGING_SECONDS
under EVALSITE_UPLOAD_STAGING_DIR, in a folder named by a random token), dry-run to show the
plan, and imported from there when the reviewer confirms; a confirmed or expired stage is
removed."""

from __future__ import annotations

import errno
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
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


#: A stage's token, as stage_upload makes it (and nothing a path could be built from).
TOKEN = re.compile(r"^[A-Za-z0-9_-]{22}$")


@dataclass(frozen=True)
class Staged:
    """An uploaded archive kept for a preview: its folder's token and the archive's name."""

    token: str
    name: str


def import_upload(
    upload: UploadedFile, *, dry_run: bool = False, keep_going: bool = False
) -> ImportReport:
    """Import an uploaded .zip / .tar.gz workspace archive: all of it, or nothing (with
    `keep_going`, each valid iteration, the rejected ones listed in the report).

    Raises ImportFailure (UploadTooLarge for the size limit) with the one-line message, which
    names the upload as the client called it, never where it was saved.
    """
    name = _checked_archive(upload)
    with _upload_folder() as folder:
        path = folder / name
        _save(upload, path, shown=name)
        return _import_saved(path, folder, dry_run=dry_run, keep_going=keep_going)


def stage_upload(upload: UploadedFile) -> Staged:
    """Keep an uploaded archive for a preview and a later `import_staged`."""
    name = _checked_archive(upload)
    discard_stale()
    token = secrets.token_urlsafe(16)
    folder = _staging_root() / token
    folder.mkdir(mode=0o700)
    try:
        _save(upload, folder / name, shown=name)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return Staged(token, name)


def import_staged(staged: Staged, *, dry_run: bool, keep_going: bool = False) -> ImportReport:
    """Import (or dry-run) a staged archive; a real import removes the stage, whatever its
    outcome, so one preview is imported at most once."""
    folder = _staging_root() / staged.token
    path = folder / staged.name
    if not TOKEN.match(staged.token) or Path(staged.name).name != staged.name:
        raise ImportFailure("not a preview of this site", path=staged.name)
    if not path.is_file():
        raise ImportFailure(
            "this preview has expired or was imported already; upload the archive again",
            path=staged.name,
        )
    try:
        return _import_saved(path, folder, dry_run=dry_run, keep_going=keep_going)
    finally:
        if not dry_run:
            shutil.rmtree(folder, ignore_errors=True)


def discard_stale() -> None:
    """Remove stages older than EVALSITE_UPLOAD_STAGING_SECONDS."""
    root = _staging_root()
    oldest = time.time() - settings.EVALSITE_UPLOAD_STAGING_SECONDS
    for folder in root.iterdir():
        try:
            if folder.lstat().st_mtime < oldest:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue


def _staging_root() -> Path:
    root = Path(settings.EVALSITE_UPLOAD_STAGING_DIR or tempfile.gettempdir()) / "evalsite-staged"
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root


def _checked_archive(upload: UploadedFile) -> str:
    name = Path(upload.name or "upload").name
    if not name.lower().endswith(ARCHIVE_SUFFIXES):
        raise ImportFailure("not a .zip or .tar.gz archive of a workspace", path=name)
    limit = settings.EVALSITE_UPLOAD_MAX_BYTES
    if upload.size is not None and upload.size > limit:
        raise UploadTooLarge(
            f"{upload.size} bytes is over the upload limit of {limit} bytes", path=name
        )
    return name


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
    report.placed = [
        (skill, label, as_sent(folder_shown), why)
        for skill, label, folder_shown, why in report.placed
    ]
    report.skill_folders = [(skill, as_sent(shown)) for skill, shown in report.skill_folders]
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
