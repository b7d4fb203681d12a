"""The host's only way into folders an untrusted party controls: nothing followed, nothing blocks.

A task folder is the agent's to write (its links, FIFOs, the scratch files sandboxed git
wrote), a skill folder its author's (a `SKILL.md` linked to `~/.ssh/id_rsa`, fixtures under a
folder linked to `/etc`). Opened with plain `open()`, a link the agent left in the diff's
scratch folder pointing at `/proc/self/cwd/.env` put the site's secrets on a run page, and a
FIFO hung a campaign forever. So every path under such a folder is opened here:

- from a directory descriptor on the trusted root (the operator named it, or runevals made
  it), one component at a time with `O_NOFOLLOW`, so no component may be a symbolic link —
  the effect of `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, with calls Python has;
- non-blocking, and checked on the open descriptor (a check before opening leaves a gap in
  which the file can be swapped): only regular files are read, only directories walked;
- size-capped: a read returns at most `max_bytes`, and a copy stops at its limits.

What is refused raises `UntrustedPath`, one line naming the path and what it is ("… is a
symbolic link"); callers record that as the run's error, a grader's evidence or a PlanError.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

#: Copies of untrusted trees (a staged skill, setup files) stop here: a skill folder is
#: copied into every run, so one holding a dataset or a build would fill the disk.
MAX_COPY_BYTES = 256 * 1024**2
MAX_COPY_ENTRIES = 20_000
#: Larger than any SKILL.md a person writes, wherever it is read from (a folder, a commit):
#: it is read whole into memory.
SKILL_MD_MAX_BYTES = 4 * 1024**2

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1024 * 1024


class UntrustedPath(Exception):
    """A path under an untrusted folder that is not what it must be; `str()` is one line."""


def kind(mode: int) -> str:
    """What a file is, as a message says it: "a symbolic link", "a FIFO", …"""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def relative_parts(relative: str | PurePosixPath, *, shown: str | None = None) -> tuple[str, ...]:
    """The components of a path that must stay beneath its root: relative, no `..`, no NUL."""
    text = str(relative)
    label = shown or text
    if "\0" in text:
        raise UntrustedPath(f"{label!r} contains a NUL character")
    path = PurePosixPath(text.replace("\\", "/"))
    if path.is_absolute():
        raise UntrustedPath(f"{label!r} must be a relative path")
    parts = tuple(part for part in path.parts if part != ".")
    if ".." in parts:
        raise UntrustedPath(f"{label!r} may not contain '..'")
    return parts


def _describe(dir_fd: int, name: str, shown: str) -> UntrustedPath | None:
    """Why `name` could not be opened as asked, when it exists as something else."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    return UntrustedPath(f"{shown} is {kind(info.st_mode)}; refused (never followed or opened)")


def _refusal(exc: OSError, dir_fd: int, name: str, shown: str) -> UntrustedPath:
    return _describe(dir_fd, name, shown) or UntrustedPath(f"{shown}: {exc.strerror}")


def _open_dir(dir_fd: int, name: str, shown: str, *, create: bool = False) -> int:
    if create:
        with suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=dir_fd)
    try:
        return os.open(name, _DIRECTORY, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refusal(exc, dir_fd, name, shown) from None
        raise


@contextmanager
def directory(
    root: Path, relative: str | PurePosixPath = "", *, create: bool = False
) -> Iterator[int]:
    """A descriptor on the directory `root/relative`, reached without following any link
    below `root` (`root` itself is trusted and resolved as usual); closed on exit.
    With `create`, missing directories are made (never through a link)."""
    parts = relative_parts(relative)
    if create:
        root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for depth, part in enumerate(parts, 1):
            shown = str(PurePosixPath(root, *parts[:depth]))
            inner = _open_dir(fd, part, shown, create=create)
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _split(root: Path, relative: str | PurePosixPath) -> tuple[tuple[str, ...], str, str]:
    parts = relative_parts(relative)
    if not parts:
        raise UntrustedPath(f"{root}: a file name is needed")
    return parts[:-1], parts[-1], str(PurePosixPath(root, *parts))


def _open_regular(dir_fd: int, name: str, shown: str) -> int:
    try:
        fd = os.open(name, _READ, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refusal(exc, dir_fd, name, shown) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UntrustedPath(f"{shown} is {kind(mode)}; refused (only regular files are read)")
    return fd


def _read_fd(fd: int, max_bytes: int) -> bytes:
    chunks, left = [], max_bytes
    while left > 0:
        chunk = os.read(fd, min(_CHUNK, left))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


@dataclass(frozen=True)
class Read:
    data: bytes  # at most the cap
    size: int  # the file's size when opened

    @property
    def truncated(self) -> bool:
        return self.size > len(self.data)


def read(root: Path, relative: str | PurePosixPath, *, max_bytes: int) -> Read:
    """The first `max_bytes` of the regular file `root/relative`, and its whole size.

    FileNotFoundError when it does not exist; UntrustedPath when it, or a folder on the way,
    is a link, a FIFO, a socket or a device.
    """
    folders, name, shown = _split(root, relative)
    with directory(root, PurePosixPath(*folders) if folders else "") as dir_fd:
        fd = _open_regular(dir_fd, name, shown)
        try:
            return Read(_read_fd(fd, max_bytes), os.fstat(fd).st_size)
        finally:
            os.close(fd)


def read_whole(root: Path, relative: str | PurePosixPath, *, max_bytes: int, what: str) -> bytes:
    """`read`, but a file over `max_bytes` is refused rather than cut (a definition file)."""
    found = read(root, relative, max_bytes=max_bytes + 1)
    if found.truncated:
        shown = PurePosixPath(root, *relative_parts(relative))
        raise UntrustedPath(f"{shown} is {found.size} bytes; {what} may be at most {max_bytes}")
    return found.data


def _create(dir_fd: int, name: str, shown: str) -> int:
    """A new regular file `name` (whatever stood there that is not a folder removed first:
    a link is unlinked, never written through)."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISDIR(info.st_mode):
            raise UntrustedPath(f"{shown} is a directory; a file cannot be written there")
        os.unlink(name, dir_fd=dir_fd)
    return os.open(name, _CREATE, 0o644, dir_fd=dir_fd)


def write(root: Path, relative: str | PurePosixPath, data: bytes) -> None:
    """Write `root/relative` afresh, making its folders; no link on the way is followed."""
    folders, name, shown = _split(root, relative)
    with directory(root, PurePosixPath(*folders) if folders else "", create=True) as dir_fd:
        fd = _create(dir_fd, name, shown)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)


def copy_file(
    source: Path,
    relative: str | PurePosixPath,
    target: Path,
    destination: str | PurePosixPath,
    *,
    max_bytes: int = MAX_COPY_BYTES,
) -> None:
    """Copy the regular file `source/relative` to `target/destination`, streaming, nothing
    followed on either side (a fixture the author linked to a host file is refused)."""
    folders, name, shown = _split(source, relative)
    out_folders, out_name, out_shown = _split(target, destination)
    budget = _Budget(max_bytes, 1, shown)
    with (
        directory(source, PurePosixPath(*folders) if folders else "") as src_fd,
        directory(target, PurePosixPath(*out_folders) if out_folders else "", create=True) as dst,
    ):
        fd = _open_regular(src_fd, name, shown)
        try:
            out = _create(dst, out_name, out_shown)
            try:
                while chunk := os.read(fd, _CHUNK):
                    budget.spend_bytes(len(chunk))
                    os.write(out, chunk)
            finally:
                os.close(out)
        finally:
            os.close(fd)


@dataclass
class _Budget:
    max_bytes: int
    max_entries: int
    shown: str

    def __post_init__(self) -> None:
        self.bytes_left, self.entries_left = self.max_bytes, self.max_entries

    def spend(self, size: int) -> None:
        """One more entry of `size` bytes."""
        self.entries_left -= 1
        if self.entries_left < 0:
            raise UntrustedPath(
                f"{self.shown} holds more than {self.max_entries} entries; not copied"
            )
        self.spend_bytes(size)

    def spend_bytes(self, size: int) -> None:
        self.bytes_left -= size
        if self.bytes_left < 0:
            raise UntrustedPath(
                f"{self.shown} holds more than {self.max_bytes / 1024**2:g} MiB; not copied"
            )


def _copy_file(src_fd: int, name: str, dst_fd: int, shown: str, budget: _Budget) -> None:
    fd = _open_regular(src_fd, name, shown)
    try:
        budget.spend(0)
        out = _create(dst_fd, name, shown)
        try:
            # Counted as read, not from st_size: a file may grow while it is copied.
            while chunk := os.read(fd, _CHUNK):
                budget.spend_bytes(len(chunk))
                os.write(out, chunk)
            os.fchmod(out, 0o755 if os.fstat(fd).st_mode & 0o111 else 0o644)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def copy_tree(
    source: Path,
    target: Path,
    *,
    skip: Callable[[PurePosixPath], bool] = lambda path: False,
    links: str = "refuse",
    max_bytes: int = MAX_COPY_BYTES,
    max_entries: int = MAX_COPY_ENTRIES,
) -> list[PurePosixPath]:
    """Copy the directory `source` (trusted path) to `target` (made if missing): regular
    files and folders only, walked by descriptor, nothing followed; the paths copied.

    A symbolic link is refused (`links="refuse"`: UntrustedPath naming it) or recreated as
    the same link (`links="copy"`), which the host never follows and a sandbox resolves
    only among what it can see. A FIFO, socket or device is always refused. `skip(path)`
    leaves out a relative path (a file or a whole folder).
    """
    budget = _Budget(max_bytes, max_entries, str(source))
    copied: list[PurePosixPath] = []
    with directory(source) as src_fd, directory(target, create=True) as dst_fd:
        _copy_dir(src_fd, dst_fd, PurePosixPath(), source, skip, links, budget, copied)
    return copied


def _copy_dir(
    src_fd: int,
    dst_fd: int,
    here: PurePosixPath,
    source: Path,
    skip: Callable[[PurePosixPath], bool],
    links: str,
    budget: _Budget,
    copied: list[PurePosixPath],
) -> None:
    for name in sorted(os.listdir(src_fd)):
        relative = here / name
        if skip(relative):
            continue
        shown = str(source / relative)
        info = os.stat(name, dir_fd=src_fd, follow_symlinks=False)
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            budget.spend(0)
            inner_src = _open_dir(src_fd, name, shown)
            try:
                inner_dst = _open_dir(dst_fd, name, shown, create=True)
                try:
                    _copy_dir(inner_src, inner_dst, relative, source, skip, links, budget, copied)
                finally:
                    os.close(inner_dst)
            finally:
                os.close(inner_src)
        elif stat.S_ISREG(mode):
            _copy_file(src_fd, name, dst_fd, shown, budget)
            copied.append(relative)
        elif stat.S_ISLNK(mode) and links == "copy":
            budget.spend(0)
            pointed = os.readlink(name, dir_fd=src_fd)
            with suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dst_fd)
            os.symlink(pointed, name, dir_fd=dst_fd)
            copied.append(relative)
        else:
            raise UntrustedPath(f"{shown} is {kind(mode)}; refused (never followed or copied)")


def regular_files(root: Path, relative: str | PurePosixPath = "") -> list[PurePosixPath]:
    """Every regular file under `root/relative` (relative to it), walked without following a
    link; a link, FIFO, socket or device on the way is UntrustedPath."""
    found: list[PurePosixPath] = []
    budget = _Budget(MAX_COPY_BYTES, MAX_COPY_ENTRIES, str(PurePosixPath(root, relative)))

    def walk(fd: int, here: PurePosixPath) -> None:
        for name in sorted(os.listdir(fd)):
            shown = str(PurePosixPath(root, relative, here, name))
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
            budget.spend(0)
            if stat.S_ISDIR(mode):
                inner = _open_dir(fd, name, shown)
                try:
                    walk(inner, here / name)
                finally:
                    os.close(inner)
            elif stat.S_ISREG(mode):
                found.append(here / name)
            else:
                raise UntrustedPath(f"{shown} is {kind(mode)}; refused (never followed or copied)")

    with directory(root, relative) as top:
        walk(top, PurePosixPath())
    return found


def entry_kind(root: Path, relative: str | PurePosixPath) -> str | None:
    """What `root/relative` is ("a regular file", "a directory", "a symbolic link", …), None
    when it does not exist; the folders on the way must be real folders."""
    folders, name, _ = _split(root, relative)
    try:
        with directory(root, PurePosixPath(*folders) if folders else "") as dir_fd:
            return kind(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return None
