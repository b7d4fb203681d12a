"""What the user gave an import, as folders: archives extracted to a temporary folder."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from .archives import archive_kind, extract_archive
from .errors import ImportFailure


@dataclass(frozen=True)
class ImportRoot:
    """A folder to import, how messages name it, and what is known about it from outside.

    `provenance` is merged into the provenance of every iteration found under the folder
    (`--history` records the commit there); `generated_at` dates an iteration whose files
    carry no timestamp.
    """

    path: Path
    display: str
    provenance: dict[str, Any] = field(default_factory=dict)
    generated_at: datetime | None = None


@contextmanager
def materialised(paths: list[Path | str]) -> Iterator[list[ImportRoot]]:
    """An ImportRoot per path, extracting archives to a temporary folder."""
    temp = Path(tempfile.mkdtemp(prefix="evalsite-import-"))
    try:
        roots = []
        for index, given in enumerate(paths):
            path = Path(given)
            if not path.exists():
                raise ImportFailure("no such file or folder", path=str(given))
            if path.is_dir():
                roots.append(ImportRoot(path, str(given).rstrip("/") or "/"))
                continue
            if archive_kind(path) is None:
                raise ImportFailure(
                    "not a folder or a .zip / .tar.gz archive of a workspace", path=str(given)
                )
            # Named after the archive so a lone iteration folder inside gets its skill's name
            # from "<skill>.zip" (an eval-magic iteration's skill is its parent folder).
            into = temp / str(index) / archive_stem(path)
            into.mkdir(parents=True)
            root = extract_archive(
                path,
                into,
                max_bytes=settings.EVALSITE_ARCHIVE_MAX_BYTES,
                max_files=settings.EVALSITE_ARCHIVE_MAX_FILES,
            )
            display = str(given) if root == into else f"{given}!/{root.name}"
            roots.append(ImportRoot(root, display))
        yield roots
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def archive_stem(path: Path) -> str:
    name = path.name
    for suffix in (".tar.gz", ".tgz", ".zip", ".tar"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)] or "archive"
    return name
