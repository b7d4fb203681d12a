"""Starting git on an untrusted repository, and reading what it prints within bounds."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Protocol

#: Transports git knows by name. `protocol.allow=never` covers any other, but a repository's
#: own `protocol.<name>.allow=always` outranks it for that name, so each is named again here.
PROTOCOLS = ("ext", "fd", "file", "git", "ssh", "http", "https", "ftp", "ftps")

#: Command-line config outranks every config file, the repository's own included. Each key
#: here names a program git may run, a file it may read, or a way to reach another host; most
#: are never read by the plumbing we run, and are set anyway so that reading stays harmless if
#: a future caller runs more. Per-driver keys (`filter.<driver>.*`, `diff.<driver>.textconv`)
#: cannot be listed: they are kept unreachable by running only commands that never use them.
OVERRIDES = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.sshCommand=false",
    "core.pager=cat",
    "core.askPass=false",
    "core.editor=false",
    "core.gitProxy=false",
    "core.alternateRefsCommand=false",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "core.useReplaceRefs=false",
    "core.quotePath=false",
    "core.ignoreCase=false",
    "core.untrackedCache=false",
    "credential.helper=",  # an empty value empties the list of helpers
    "diff.external=false",
    "diff.orderFile=/dev/null",
    "diff.relative=false",
    "diff.noprefix=false",
    "gpg.program=false",
    "gpg.ssh.program=false",
    "gpg.x509.program=false",
    "i18n.logOutputEncoding=UTF-8",
    "log.showSignature=false",
    "log.follow=false",
    "log.mailmap=false",
    "mailmap.file=/dev/null",
    "color.ui=never",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "uploadpack.packObjectsHook=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "protocol.allow=never",
    *(f"protocol.{name}.allow=never" for name in PROTOCOLS),
)
#: The whole environment git gets besides PATH and the repository's location: an allow-list,
#: so nothing the caller's environment holds (GIT_DIR, GIT_CONFIG_PARAMETERS, GIT_EXEC_PATH,
#: GIT_TRACE2_*) reaches it.
ENVIRONMENT = {
    "HOME": "/nonexistent",
    "LANG": "C",
    "LC_ALL": "C",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_LITERAL_PATHSPECS": "1",
    "GIT_SSH_COMMAND": "false",
    "GIT_PAGER": "cat",
}
#: Limits on git itself where the sandbox does not set them (prlimit, as the sandbox does).
MEMORY_BYTES = 2 * 1024**3
CPU_SECONDS = 300
READ_CHUNK = 1 << 20
MAX_UNREAD = 64 * READ_CHUNK
STDERR_KEPT = 4096


class GitError(Exception):
    """git could not read the repository, or we refused to let it; one line saying why."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class Launcher(Protocol):
    """Starts `argv` with exactly `env`, able to read `reads`; stdin, stdout, stderr are pipes.

    Leaving the context kills the process and whatever it started, and closes stdin and
    stdout; stderr is closed by the thread that reads it (GitStream).
    """

    def __call__(
        self, argv: Sequence[str], *, env: Mapping[str, str], reads: Sequence[Path]
    ) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]: ...


@contextlib.contextmanager
def run_here(
    argv: Sequence[str], *, env: Mapping[str, str], reads: Sequence[Path]
) -> Iterator[subprocess.Popen[bytes]]:
    """The launcher without a sandbox: git on this machine, its memory and CPU limited."""
    limits = []
    if prlimit := shutil.which("prlimit"):
        limits = [prlimit, f"--data={MEMORY_BYTES}", f"--cpu={CPU_SECONDS}", "--core=0", "--"]
    process = subprocess.Popen(
        [*limits, *argv],
        env=dict(env),
        cwd=reads[0],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # never the terminal's: a Ctrl-C is ours to handle
    )
    try:
        yield process
    finally:
        process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout):
            with contextlib.suppress(OSError):
                pipe.close()  # type: ignore[union-attr]


class _Stderr(threading.Thread):
    """Reads stderr to its end so git never blocks on it; keeps only the start."""

    def __init__(self, pipe: IO[bytes]) -> None:
        super().__init__(name="git-stderr", daemon=True)
        self.pipe = pipe
        self.kept = b""
        self.start()

    def run(self) -> None:
        # The pipe is closed here, at its end, and by nobody else: closed while this thread
        # still read its descriptor, the number could be reused by the next git's stderr.
        with self.pipe, contextlib.suppress(OSError, ValueError):
            while chunk := os.read(self.pipe.fileno(), 65536):
                if len(self.kept) < STDERR_KEPT:
                    self.kept += chunk[: STDERR_KEPT - len(self.kept)]

    def first_line(self) -> str:
        self.join(timeout=5)  # git has ended: its stderr is at its end too
        text = self.kept.decode("utf-8", errors="replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        # "warning: lazy fetching disabled" and the like come before the reason.
        reasons = [line for line in lines if not line.startswith(("warning:", "hint:"))]
        return (reasons or lines or [""])[0].removeprefix("fatal: ").removeprefix("error: ")


class GitStream:
    """What a running git prints, read in bounded pieces: each within `timeout` seconds, and
    all of it within `total` seconds when given."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        *,
        failure: str,
        timeout: float,
        total: float | None = None,
    ) -> None:
        assert process.stdin and process.stdout and process.stderr
        self.process = process
        self.failure = failure
        self.timeout = timeout
        self.total = total
        self.deadline = None if total is None else time.monotonic() + total
        self._fd = process.stdout.fileno()
        self._poll = select.poll()  # not select(): a worker may hold more than 1,024 files
        self._poll.register(self._fd, select.POLLIN)
        self._buffer = bytearray()
        self._eof = False
        self._stderr = _Stderr(process.stderr)

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(data)
            self.process.stdin.flush()
        except OSError:
            raise self.ended("git stopped reading") from None

    def read_until(self, separator: bytes, *, limit: int) -> bytes | None:
        """The bytes up to `separator` (dropped); None at the end of the output."""
        start = 0
        while (found := self._buffer.find(separator, start)) < 0:
            if len(self._buffer) > limit:
                raise self.error(f"git printed a field longer than {limit} bytes")
            start = max(0, len(self._buffer) - len(separator) + 1)
            if not self._fill():
                if self._buffer:
                    raise self.ended("git's output ended mid-field")
                return None
        if found > limit:
            raise self.error(f"git printed a field longer than {limit} bytes")
        piece = bytes(self._buffer[:found])
        del self._buffer[: found + len(separator)]
        return piece

    def chunks(self, size: int) -> Iterator[bytes]:
        """The next `size` bytes, in pieces of at most READ_CHUNK."""
        while size:
            if not self._buffer and not self._fill():
                raise self.ended("git's output ended mid-object")
            piece = bytes(self._buffer[: min(size, READ_CHUNK)])
            del self._buffer[: len(piece)]
            size -= len(piece)
            yield piece

    def read_all(self, *, limit: int) -> bytes:
        while self._fill():
            if len(self._buffer) > limit:
                raise self.error(f"git printed more than {limit} bytes")
        data = bytes(self._buffer)
        self._buffer.clear()
        return data

    def _fill(self) -> bool:
        if self._eof:
            return False
        wait = self.timeout
        if self.deadline is not None:
            wait = min(wait, self.deadline - time.monotonic())
        if wait <= 0 or not self._poll.poll(wait * 1000):
            if wait < self.timeout:
                raise self.error(f"git did not finish within {self.total:g} s")
            raise self.error(f"git printed nothing for {self.timeout:g} s")
        chunk = os.read(self._fd, READ_CHUNK)
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    def finish(self) -> None:
        """Close git's input, let it end, and raise GitError if it failed."""
        with contextlib.suppress(OSError):
            self.process.stdin.close()  # type: ignore[union-attr]
        deadline = time.monotonic() + self.timeout
        left = MAX_UNREAD
        while self._fill():  # what nobody asked for: a `cat-file --batch` ends with none
            left -= len(self._buffer)
            self._buffer.clear()
            if left < 0:
                raise self.error(f"git printed more than {MAX_UNREAD} bytes nobody asked for")
        try:
            code = self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise self.error(f"git did not end within {self.timeout:g} s") from None
        if code != 0:
            line = self._stderr.first_line()
            raise GitError(f"{self.failure} (git: {line})" if line else self.failure)

    def ended(self, detail: str) -> GitError:
        """Output that stopped short: git's own reason when it failed, else `detail`."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=1)
        failed = self.process.returncode not in (None, 0)
        line = self._stderr.first_line() if failed else ""
        return self.error(f"git: {line}" if line else detail)

    def error(self, detail: str) -> GitError:
        return GitError(f"{self.failure} ({detail})")
