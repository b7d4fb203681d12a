"""One archive extraction in progress: its limits, the paths it writes, the links it copies.

The member readers (archives.py, one per format) hand each checked member to `Extraction`,
which alone writes to the disk: under its root only, counting bytes as they are written.
"""

from __future__ import annotations

import lzma
import os
import re
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from runs.importing.errors import ImportFailure

CHUNK_SIZE = 1 << 20
_DRIVE_LETTER = re.compile(r"[A-Za-z]:")
_MAX_LINK_HOPS = 40  # as the Linux kernel does, so a loop fails instead of spinning
# Errors that mean the archive's bytes are bad. OSError is here because gzip and bz2 raise it
# for damaged data; failures writing to disk are caught separately, closer to the write.
CORRUPTION = (
    zipfile.BadZipFile,
    tarfile.TarError,
    EOFError,
    zlib.error,
    lzma.LZMAError,
    OSError,
    RecursionError,  # tarfile recurses once per chained pax header
)


@dataclass(frozen=True)
class _Link:
    name: str
    target: str
    resolved: tuple[str, ...]


@dataclass
class Extraction:
    """One extraction in progress: the limits, what has been spent, the links to copy."""

    archive: Path
    root: Path
    max_bytes: int
    max_files: int
    members: int = 0
    written: int = 0
    links: dict[tuple[str, ...], _Link] = field(default_factory=dict)
    # Which member each file path came from (links are in `links`), and every folder the
    # members imply: two members for one path would otherwise have the last silently
    # overwrite the first.
    files: dict[tuple[str, ...], str] = field(default_factory=dict)
    folders: set[tuple[str, ...]] = field(default_factory=set)

    def failure(self, message: str) -> ImportFailure:
        return ImportFailure(message, path=self.archive)

    def corrupt(self, error: BaseException) -> ImportFailure:
        detail = " ".join(str(error).split()) or type(error).__name__
        return self.failure(f"corrupt archive: {detail}")

    def count_members(self, count: int = 1) -> None:
        self.members += count
        if self.members > self.max_files:
            raise self.failure(
                f"archive holds more than {self.max_files} files (limit EVALSITE_ARCHIVE_MAX_FILES)"
            )

    def member_parts(self, name: str) -> tuple[str, ...]:
        """The checked path components of a member, relative to the root."""
        if "\x00" in name:
            raise self.failure(f"member {name!r} has a NUL byte in its name")
        # Windows-made zips may use backslashes; treating them as separators everywhere also
        # means "..\\" cannot slip past the traversal check.
        normalised = name.replace("\\", "/")
        if normalised.startswith("/") or _DRIVE_LETTER.match(normalised):
            raise self.failure(f"member {name!r} has an absolute path")
        parts = _resolve((), normalised)
        if parts is None:
            raise self.failure(f"member {name!r} escapes the archive root")
        return parts

    def claim_file(self, name: str, parts: tuple[str, ...], *, link: bool = False) -> None:
        """Refuse a second member for the same path, or a file where a folder is needed.

        A link may turn out to point at a folder, known only once links are copied, so a link
        where members need a folder is left to materialise_links to refuse.
        """
        first = self.files.get(parts) or (self.links[parts].name if parts in self.links else None)
        if first is not None:
            if first == name:
                raise self.failure(f"member {name!r} appears twice in the archive")
            raise self.failure(f"member {name!r} is the same path as member {first!r}")
        if not link and parts in self.folders:
            raise self.failure(
                f"member {name!r} is a file, but other members are inside it as a folder"
            )
        self._claim_folders(name, parts[:-1])
        if not link:
            self.files[parts] = name

    def claim_folder(self, name: str, parts: tuple[str, ...]) -> None:
        # The same folder listed twice is harmless (tar -r, or "./" and "." both listed).
        self._claim_folders(name, parts)

    def _claim_folders(self, name: str, parts: tuple[str, ...]) -> None:
        for end in range(len(parts), 0, -1):
            folder = parts[:end]
            if folder in self.folders:
                return  # and so are the folders above it
            file = self.files.get(folder)
            if file is not None:
                raise self.failure(
                    f"member {name!r} needs {'/'.join(folder)!r} to be a folder,"
                    f" but member {file!r} is a file"
                )
            self.folders.add(folder)

    def make_dir(self, name: str, parts: tuple[str, ...]) -> None:
        try:
            self.root.joinpath(*parts).mkdir(mode=0o755, parents=True, exist_ok=True)
        except OSError as error:
            raise self.failure(f"cannot extract member {name!r}: {error.strerror}") from None

    def write_file(self, name: str, parts: tuple[str, ...], source: IO[bytes]) -> None:
        """Stream `source` to the member's path, stopping before the byte limit is passed."""
        dest = self.root.joinpath(*parts)
        try:
            dest.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            with open(dest, "wb", opener=_open_without_following) as out:
                for chunk in self._chunks(source):
                    self.written += len(chunk)
                    if self.written > self.max_bytes:
                        raise self.failure(
                            f"archive expands to more than {self.max_bytes} bytes"
                            " (limit EVALSITE_ARCHIVE_MAX_BYTES)"
                        )
                    out.write(chunk)
        except OSError as error:
            raise self.failure(f"cannot extract member {name!r}: {error.strerror}") from None

    def _chunks(self, source: IO[bytes]) -> Iterator[bytes]:
        # Read errors are the archive's fault and must not be mistaken for write errors.
        while True:
            try:
                chunk = source.read(CHUNK_SIZE)
            except CORRUPTION as error:
                raise self.corrupt(error) from None
            if not chunk:
                return
            yield chunk

    def add_link(
        self, name: str, parts: tuple[str, ...], target: str, *, base: tuple[str, ...]
    ) -> None:
        """Remember a link to copy once every file is out; refuse it now if it leaves the root.

        `base` is what a relative target is relative to: the link's own directory for a
        symlink, the archive root for a tar hardlink.
        """
        normalised = target.replace("\\", "/")
        resolved = None
        if not normalised.startswith("/") and not _DRIVE_LETTER.match(normalised):
            resolved = _resolve(base, normalised)
        if resolved is None:
            raise self.failure(f"member {name!r} links outside the archive (to {target!r})")
        self.links[parts] = _Link(name=name, target=target, resolved=resolved)

    def materialise_links(self) -> None:
        """Replace each remembered link by a copy of the file it finally points at."""
        for parts, link in self.links.items():
            source = self.root.joinpath(*self._follow(link))
            if source.is_dir():
                raise self.failure(
                    f"member {link.name!r} links to a directory ({link.target!r});"
                    " only links to files are supported"
                )
            if not source.is_file():
                raise self.failure(
                    f"member {link.name!r} links to {link.target!r}, which is not in the archive"
                )
            if os.path.lexists(self.root.joinpath(*parts)):
                raise self.failure(f"member {link.name!r} clashes with another member")
            with open(source, "rb") as file:
                self.write_file(link.name, parts, file)

    def _follow(self, link: _Link) -> tuple[str, ...]:
        target = link.resolved
        for _ in range(_MAX_LINK_HOPS):
            onward = self.links.get(target)
            if onward is None:
                return target
            target = onward.resolved
        raise self.failure(f"member {link.name!r} is part of a link loop")


def _resolve(base: tuple[str, ...], path: str) -> tuple[str, ...] | None:
    """Apply a relative /-separated path to `base` lexically; None if it climbs above the root.

    Lexical resolution is sound here because no links exist on disk while we extract.
    """
    parts = list(base)
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return tuple(parts)


def is_macos_junk(parts: tuple[str, ...]) -> bool:
    if "__MACOSX" in parts:
        return True
    return bool(parts) and (parts[-1] == ".DS_Store" or parts[-1].startswith("._"))


def _open_without_following(path: str, flags: int) -> int:
    # No links are ever created under the root, so this only guards against our own bugs.
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o644)
