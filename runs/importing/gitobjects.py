"""Writing a result folder out of a clone's git objects, as a folder import would read it.

Used by `--history` (history.py). A clone is as untrusted as an uploaded archive: git runs
only through runs.untrusted_git (its config neutralised, objects asked for by id, no path
parsed by git), what is walked is held to EVALSITE_GIT_MAX_TREE_ENTRIES and what is written
to the archive limits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from runs.untrusted_git import BLOB_MODES, GitError, ObjectReader, TreeEntry, safe_name

from .errors import ImportFailure
from .tree import SKIPPED_FILES, is_skipped_dir

#: A `.git` file is a link to some repository's internals, never a result.
NOT_WRITTEN = SKIPPED_FILES | {".git"}
TREE_MODE = "40000"


@contextlib.contextmanager
def git_failures(given: str) -> Iterator[None]:
    """git's one-line errors as the importer's, naming the path the user gave."""
    try:
        yield
    except GitError as exc:
        raise ImportFailure(exc.message, path=given) from None


class GitObjects:
    """The trees and blobs of one clone, for one history import."""

    def __init__(self, reader: ObjectReader, *, given: str) -> None:
        self.reader = reader
        #: The path as the user gave it (for messages).
        self.given = given
        self.written = self.files_written = 0

    def read(self, oid: str, *, limit: int | None = None) -> bytes | None:
        """A blob's bytes; None (and skipped over) when larger than `limit`."""
        return self.reader.read(oid, limit=limit)

    def lookup(self, tree: str, path: str) -> TreeEntry | None:
        return self.reader.lookup(tree, path)

    def files(self, tree: str, *, display: str = "") -> list[tuple[str, str]]:
        """(relative path, blob id) of every regular file below `tree`.

        What a folder import leaves out is never written: links (it never follows one),
        submodules, `.git`, agent working folders and hidden tool state. A name that could
        escape the folder is refused outright: only a crafted repository holds one.
        """
        limit = settings.EVALSITE_GIT_MAX_TREE_ENTRIES
        found: list[tuple[str, str]] = []
        stack = [(tree, "")]
        walked = 0
        while stack:
            oid, prefix = stack.pop()
            entries = self.reader.tree(oid)
            walked += len(entries)
            if walked > limit:  # each tree within the limit, but millions of them
                raise ImportFailure(
                    f"holds more than {limit} files and folders "
                    "(limit EVALSITE_GIT_MAX_TREE_ENTRIES)",
                    path=display or self.given,
                )
            for entry in entries:
                if not safe_name(entry.name):
                    raise ImportFailure(
                        f"refused: a tree entry named {entry.name!r}, which git itself rejects",
                        path=f"{display}/{prefix}".rstrip("/") or self.given,
                    )
                if entry.mode == TREE_MODE:
                    if not is_skipped_dir(entry.name):
                        stack.append((entry.oid, f"{prefix}{entry.name}/"))
                elif entry.mode in BLOB_MODES and entry.name not in NOT_WRITTEN:
                    found.append((prefix + entry.name, entry.oid))
        return found

    def write(self, oid: str, dest: Path) -> None:
        """Stream a blob to `dest`, checking the limits before reading a byte of it."""
        kind, size = self.reader.header(oid)
        if kind != "blob":
            raise GitError(f"object {oid} is a {kind}, not a blob")
        self.files_written += 1
        self.written += size
        if self.files_written > settings.EVALSITE_ARCHIVE_MAX_FILES:
            raise ImportFailure(
                f"its history holds more than {settings.EVALSITE_ARCHIVE_MAX_FILES} result "
                "files (limit EVALSITE_ARCHIVE_MAX_FILES)",
                path=self.given,
            )
        if self.written > settings.EVALSITE_ARCHIVE_MAX_BYTES:
            raise ImportFailure(
                f"its history holds more than {settings.EVALSITE_ARCHIVE_MAX_BYTES} bytes of "
                "results (limit EVALSITE_ARCHIVE_MAX_BYTES)",
                path=self.given,
            )
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "wb") as out:
            for chunk in self.reader.chunks(size):
                out.write(chunk)
