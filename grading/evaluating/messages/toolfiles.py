"""Files as the agent's tools read and write them: regular files only, never a read that blocks.

A FIFO opened to read waits for a writer forever and a device never ends, so every file is
opened non-blocking, without following a symlink, and checked on the open descriptor.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: Read and Edit refuse larger files, Grep skips them: the whole file is held in memory.
MAX_FILE_BYTES = 10 * 1024**2


class ToolError(Exception):
    """A tool call the agent made wrongly; its message goes back as the tool result."""


def _regular(descriptor: int, shown: str) -> os.stat_result:
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{shown} is not a regular file (a FIFO, socket or device); refused")
    return info


def read_file(path: Path, shown: str) -> bytes:
    """A regular file's bytes, at most MAX_FILE_BYTES; a FIFO or device is a ToolError.

    Opened non-blocking and checked on the open descriptor: opening a FIFO to read waits
    for a writer forever, and checking before opening leaves a gap to swap the file.
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        size = _regular(descriptor, shown).st_size
        if size > MAX_FILE_BYTES:
            raise ToolError(
                f"{shown} is {size} bytes; the file tools read files up to {MAX_FILE_BYTES} "
                "bytes (use Bash with head, tail or grep for larger ones)"
            )
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            return handle.read(MAX_FILE_BYTES + 1)[:MAX_FILE_BYTES]
    finally:
        os.close(descriptor)


def write_file(path: Path, content: str, shown: str) -> None:
    """Replace a regular file's content (creating it); a FIFO or device is a ToolError."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(path, flags, 0o666)
    try:
        _regular(descriptor, shown)
        os.ftruncate(descriptor, 0)
        with os.fdopen(descriptor, "wb", closefd=False) as handle:
            handle.write(content.encode("utf-8"))
    finally:
        os.close(descriptor)


def searchable(path: Path) -> str | None:
    """A file's text for Grep, or None for what ripgrep would skip (not a regular file, too
    large, not UTF-8) — never a read that blocks."""
    try:
        data = read_file(path, str(path))
        return data.decode("utf-8")
    except (ToolError, OSError, UnicodeDecodeError):
        return None
