"""Unpack a result archive (.zip, .tar.gz, .tgz, .tar) safely, ready to import.

Archives arrive from the command line and from web uploads, so nothing in one is trusted:
member names are checked before anything touches the disk, paths on disk are built only from
checked names, links are never created (those that stay inside the archive become plain
copies), and the size limit counts bytes as they are written rather than believing headers.
"""

from __future__ import annotations

import gzip
import lzma
import os
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from runs.importing.errors import ImportFailure

CHUNK_SIZE = 1 << 20

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a first member, or an empty archive
_GZIP_MAGIC = b"\x1f\x8b"
_DRIVE_LETTER = re.compile(r"[A-Za-z]:")
_MAX_LINK_TARGET = 4096  # PATH_MAX; a longer zip symlink target is not a path
_MAX_LINK_HOPS = 40  # as the Linux kernel does, so a loop fails instead of spinning
# tarfile reads pax/long-name headers and sparse maps into memory whole, at their declared
# size. Real ones are a few KiB; past this a hostile header is trying to exhaust memory.
_MAX_HEADER_BYTES = 1 << 20

# Errors that mean the archive's bytes are bad. OSError is here because gzip and bz2 raise it
# for damaged data; failures writing to disk are caught separately, closer to the write.
_CORRUPTION = (
    zipfile.BadZipFile,
    tarfile.TarError,
    EOFError,
    zlib.error,
    lzma.LZMAError,
    OSError,
    RecursionError,  # tarfile recurses once per chained pax header
)
_SPECIAL_KINDS = {
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFIFO: "FIFO",
    stat.S_IFSOCK: "socket",
}
_TAR_SPECIAL_KINDS = {
    tarfile.CHRTYPE: "character device",
    tarfile.BLKTYPE: "block device",
    tarfile.FIFOTYPE: "FIFO",
}


def archive_kind(path: Path) -> str | None:
    """Return "zip" or "tar" (plain or gzipped) judged by the file's bytes, else None.

    The file name is ignored: an upload's name is whatever the browser says it is.
    """
    with open(path, "rb") as file:
        head = file.read(tarfile.BLOCKSIZE)
    if head.startswith(_ZIP_MAGIC):
        return "zip"
    if head.startswith(_GZIP_MAGIC):
        try:
            with gzip.open(path) as file:
                head = file.read(tarfile.BLOCKSIZE)
        except (OSError, EOFError, zlib.error):
            # Gzip framing around damaged data: a broken .tar.gz is far likelier than a broken
            # .json.gz, and extraction will then report it as corrupt rather than as "not an
            # archive", which would puzzle whoever made it.
            return "tar"
    return "tar" if _is_tar_header(head) else None


def extract_archive(archive: Path, into: Path, *, max_bytes: int, max_files: int) -> Path:
    """Extract `archive` into the empty directory `into`; return the directory to import from.

    That is the archive's single top-level directory when it holds nothing else, else `into`.
    macOS junk (`__MACOSX/`, `.DS_Store`, `._*` AppleDouble files) is skipped. A symlink or
    hardlink whose target stays inside the archive becomes a regular copy of its target (the
    copy counts towards `max_bytes`); a link to a directory, to something missing or outside
    the archive refuses the whole archive. `max_files` counts every member: files, links,
    directories and skipped junk alike, since each costs work.

    Raises ImportFailure, naming the archive and where relevant the member, for anything that
    is not a readable, well-behaved archive. Nothing is ever written outside `into`, but on
    failure `into` may hold a partial extraction: the caller deletes it.
    """
    if not into.is_dir() or any(into.iterdir()):
        raise ValueError(f"{into} must be an existing empty directory")
    try:
        kind = archive_kind(archive)
    except OSError as error:
        raise ImportFailure(f"cannot read archive: {error.strerror}", path=archive) from None
    if kind is None:
        raise ImportFailure("not a .zip or .tar.gz archive", path=archive)
    job = _Extraction(archive=archive, root=into, max_bytes=max_bytes, max_files=max_files)
    if kind == "zip":
        _extract_zip(job)
    else:
        _extract_tar(job)
    job.materialise_links()
    entries = list(into.iterdir())
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return into


@dataclass(frozen=True)
class _Link:
    name: str
    target: str
    resolved: tuple[str, ...]


@dataclass
class _Extraction:
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
            except _CORRUPTION as error:
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


def _extract_zip(job: _Extraction) -> None:
    try:
        with zipfile.ZipFile(job.archive) as archive:
            members = archive.infolist()
            job.count_members(len(members))  # the central directory lists all: refuse up front
            for info in members:
                _extract_zip_member(job, archive, info)
    except _CORRUPTION as error:
        raise job.corrupt(error) from None


def _extract_zip_member(job: _Extraction, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
    name = info.filename
    parts = job.member_parts(name)
    if _is_macos_junk(parts):
        return
    # Unix tools keep the st_mode in the high 16 bits; zero means "plain file" (e.g. Windows).
    file_type = stat.S_IFMT(info.external_attr >> 16)
    if info.is_dir() or file_type == stat.S_IFDIR:
        job.claim_folder(name, parts)
        job.make_dir(name, parts)
    elif file_type in (0, stat.S_IFREG, stat.S_IFLNK):
        job.claim_file(name, parts, link=file_type == stat.S_IFLNK)
        if info.flag_bits & 0x1:
            raise job.failure(f"member {name!r} is encrypted")
        try:
            source = archive.open(info)
        except NotImplementedError:
            raise job.failure(f"member {name!r} uses an unsupported compression method") from None
        with source:
            if file_type != stat.S_IFLNK:
                job.write_file(name, parts, source)
                return
            target = source.read(_MAX_LINK_TARGET + 1)
        if len(target) > _MAX_LINK_TARGET:
            raise job.failure(f"member {name!r} has a link target over {_MAX_LINK_TARGET} bytes")
        decoded = target.decode("utf-8", "surrogateescape")
        job.add_link(name, parts, decoded, base=parts[:-1])
    else:
        kind = _SPECIAL_KINDS.get(file_type, "special file")
        raise job.failure(
            f"member {name!r} is a {kind}; only files, directories and links are allowed"
        )


def _extract_tar(job: _Extraction) -> None:
    try:
        with ExitStack() as stack:
            raw = stack.enter_context(open(job.archive, "rb"))
            compressed = raw.read(len(_GZIP_MAGIC)) == _GZIP_MAGIC
            raw.seek(0)
            stream = stack.enter_context(gzip.GzipFile(fileobj=raw)) if compressed else raw
            reader = _HeaderBudget(stream)
            # Opened by hand on the decompressed stream (not tarfile.open's "r:gz") so every
            # read tarfile makes passes through the header budget.
            archive = stack.enter_context(tarfile.TarFile(fileobj=reader, mode="r"))
            for member in reader.members(archive):
                job.count_members()
                _extract_tar_member(job, archive, member)
    except _CORRUPTION as error:
        raise job.corrupt(error) from None


def _extract_tar_member(
    job: _Extraction, archive: tarfile.TarFile, member: tarfile.TarInfo
) -> None:
    # Only extractfile() is used, never extract()/extractall(): the checks here are the whole
    # defence, whatever tarfile's extraction filters do in this Python's patch version.
    name = member.name
    parts = job.member_parts(name)
    if _is_macos_junk(parts):
        return
    if member.isdir():
        job.claim_folder(name, parts)
        job.make_dir(name, parts)
    elif member.isreg():
        job.claim_file(name, parts)
        source = archive.extractfile(member)
        assert source is not None  # tarfile returns None only for non-regular members
        with source:
            job.write_file(name, parts, source)
    elif member.issym():
        job.claim_file(name, parts, link=True)
        job.add_link(name, parts, member.linkname, base=parts[:-1])
    elif member.islnk():
        job.claim_file(name, parts, link=True)
        job.add_link(name, parts, member.linkname, base=())
    else:
        kind = _TAR_SPECIAL_KINDS.get(member.type, "special file")
        raise job.failure(
            f"member {name!r} is a {kind}; only files, directories and links are allowed"
        )


class _HeaderBudget:
    """A read-through file that caps how much tarfile may read while parsing one header."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._budget: int | None = _MAX_HEADER_BYTES  # TarFile() parses the first header

    def members(self, archive: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
        while True:
            self._budget = _MAX_HEADER_BYTES
            member = archive.next()
            # Member data is read in CHUNK_SIZE pieces and bounded by the byte limit instead.
            self._budget = None
            if member is None:
                return
            yield member

    def read(self, size: int = -1) -> bytes:
        if self._budget is not None:
            if size < 0 or size > self._budget:
                raise tarfile.ReadError(f"member headers larger than {_MAX_HEADER_BYTES} bytes")
            self._budget -= size
        return self._stream.read(size)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._stream.seek(offset, whence)

    def tell(self) -> int:
        return self._stream.tell()


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


def _is_macos_junk(parts: tuple[str, ...]) -> bool:
    if "__MACOSX" in parts:
        return True
    return bool(parts) and (parts[-1] == ".DS_Store" or parts[-1].startswith("._"))


def _is_tar_header(block: bytes) -> bool:
    try:
        tarfile.TarInfo.frombuf(block, tarfile.ENCODING, "surrogateescape")
    except tarfile.HeaderError:  # short, all zeros, or a bad checksum
        return False
    return True


def _open_without_following(path: str, flags: int) -> int:
    # No links are ever created under the root, so this only guards against our own bugs.
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o644)
