"""Unpack a result archive (.zip, .tar.gz, .tgz, .tar) safely, ready to import.

Archives arrive from the command line and from web uploads, so nothing in one is trusted:
member names are checked before anything touches the disk, paths on disk are built only from
checked names, links are never created (those that stay inside the archive become plain
copies), and the size limit counts bytes as they are written rather than believing headers.
"""

from __future__ import annotations

import gzip
import os
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import IO

from runs.importing.errors import ImportFailure

from .extraction import CORRUPTION, Extraction, is_macos_junk

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a first member, or an empty archive
_GZIP_MAGIC = b"\x1f\x8b"
_MAX_LINK_TARGET = 4096  # PATH_MAX; a longer zip symlink target is not a path
# tarfile reads pax/long-name headers and sparse maps into memory whole, at their declared
# size. Real ones are a few KiB; past this a hostile header is trying to exhaust memory.
_MAX_HEADER_BYTES = 1 << 20

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
    job = Extraction(archive=archive, root=into, max_bytes=max_bytes, max_files=max_files)
    if kind == "zip":
        _extract_zip(job)
    else:
        _extract_tar(job)
    job.materialise_links()
    entries = list(into.iterdir())
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return into


def _extract_zip(job: Extraction) -> None:
    try:
        with zipfile.ZipFile(job.archive) as archive:
            members = archive.infolist()
            job.count_members(len(members))  # the central directory lists all: refuse up front
            for info in members:
                _extract_zip_member(job, archive, info)
    except CORRUPTION as error:
        raise job.corrupt(error) from None


def _extract_zip_member(job: Extraction, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
    name = info.filename
    parts = job.member_parts(name)
    if is_macos_junk(parts):
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


def _extract_tar(job: Extraction) -> None:
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
    except CORRUPTION as error:
        raise job.corrupt(error) from None


def _extract_tar_member(job: Extraction, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
    # Only extractfile() is used, never extract()/extractall(): the checks here are the whole
    # defence, whatever tarfile's extraction filters do in this Python's patch version.
    name = member.name
    parts = job.member_parts(name)
    if is_macos_junk(parts):
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


def _is_tar_header(block: bytes) -> bool:
    try:
        tarfile.TarInfo.frombuf(block, tarfile.ENCODING, "surrogateescape")
    except tarfile.HeaderError:  # short, all zeros, or a bad checksum
        return False
    return True
