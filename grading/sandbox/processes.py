"""The processes the sandbox starts: supervision within their `Limits` (bounded output, wall
time, the process count, the disk quota), and killing a process with everything it started.

`sandbox` builds the bubblewrap command line and starts processes; this module is what
watches them until they end. Its names are re-exported by `sandbox`, which callers use.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .diskquota import DiskWatch
from .limits import Limits

#: How often the process count and the wall clock are checked.
WATCH_SECONDS = 0.02
READ_CHUNK = 64 * 1024
#: After a command's main process ends, how long output from what it left behind is read.
DRAIN_SECONDS = 1.0
#: What a program prints when an allocation fails; RLIMIT_DATA makes allocations fail
#: rather than kill, so this is how `Outcome.limit` learns that memory stopped it.
_OUT_OF_MEMORY = re.compile(
    r"MemoryError|Cannot allocate memory|out of memory|std::bad_alloc|memory allocation failed",
    re.IGNORECASE,
)


class SandboxError(RuntimeError):
    """Something the sandbox, not the command, is responsible for; the run is errored."""


class SandboxUnavailable(SandboxError):
    """bubblewrap cannot run (or set up a sandbox) here; `str()` is one line saying why."""


class LimitExceeded(SandboxError):
    """A long-lived sandboxed process (the agent CLI) hit a limit; `limit` names which."""

    def __init__(self, limit: str, message: str) -> None:
        self.limit = limit
        super().__init__(message)


@dataclass
class Outcome:
    #: The exit status, bash-style: 128+N when killed by signal N (bwrap reports it so);
    #: None when the sandbox stopped the command (timed out or `limit`).
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    output_truncated: bool = False
    limit: str | None = None  # which limit stopped it: a `Limits` field name


# --- running ------------------------------------------------------------------------------


class SandboxedProcess(subprocess.Popen[bytes]):
    """A process started by `spawn`: its own process group; `limit` says what stopped it."""

    limit: str | None = None
    #: The sandbox's PID 1 once bwrap has reported it (None unsandboxed, or not yet).
    reaper: Reaper | None = None
    #: Started without bwrap: kill_tree must then hunt down its session by hand.
    unsafe: bool = True

    @property
    def sandbox_pid(self) -> int | None:
        """The host PID of the sandbox's PID 1 (the reaper bwrap puts there)."""
        return self.reaper.pid if self.reaper else None


class Reaper:
    """The sandbox's PID 1, held through a pidfd: killing it takes the whole PID namespace
    down, and a pidfd can never signal a stranger that was given the PID since."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd: int | None = fd
        self.lock = threading.Lock()

    @classmethod
    def of(cls, pid: int, bwrap: subprocess.Popen[bytes]) -> Reaper | None:
        """The reaper, if `pid` still is bwrap's child (it may already have exited)."""
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            return None
        try:
            # Pinned by the pidfd now; bwrap, our unreaped child, cannot have a stranger
            # for a child, so a matching parent proves this is the sandbox's PID 1.
            with open(f"/proc/{pid}/stat", "rb") as stat:
                parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            parent = None
        if parent != bwrap.pid:
            os.close(fd)
            return None
        return cls(pid, fd)

    def kill(self, *, timeout: float = 5.0) -> None:
        """SIGKILL it and wait until it, and so every process in the namespace, is gone."""
        with self.lock:
            if self.fd is None:
                return
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.fd, signal.SIGKILL)
            # Readable once it has exited, which the kernel lets happen only after every
            # other process of its namespace has.
            with contextlib.suppress(OSError):
                select.select([self.fd], [], [], timeout)
            os.close(self.fd)
            self.fd = None


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a process started here and everything it started, then reap it.

    Sandboxed, killing bwrap kills the namespace's PID 1, and with it every process inside.
    Unsandboxed, its process group and session are killed; a process that left both (a
    second setsid) is beyond reach — one reason the sandbox is the default.
    """
    # A session's id stays reserved while any member lives, so this never hits a stranger.
    members = _session_members(proc.pid) if getattr(proc, "unsafe", True) else []
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for pid in members:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    # Killing bwrap alone would leave the namespace to die a moment later (its PID 1 gets
    # SIGKILL on its parent's death): wait for that, so that nothing outlives this call.
    reaper = getattr(proc, "reaper", None)
    if reaper is not None:
        reaper.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _session_members(session: int) -> list[int]:
    """PIDs whose session is `session` (the ones start_new_session gave the process)."""
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if len(fields) > 3 and int(fields[3]) == session:
                found.append(int(entry.name))
    return found


_CHILD_PID = re.compile(rb'"child-pid"\s*:\s*(\d+)')
_EXIT_CODE = re.compile(rb'"exit-code"\s*:\s*(\d+)')


class Supervisor:
    """Enforces wall time and the process count on one process; collects bounded output."""

    def __init__(
        self,
        process: SandboxedProcess,
        status: int | None,
        limits: Limits,
        *,
        unsafe: bool,
        writable: Sequence[Path] = (),
    ) -> None:
        self.process = process
        self.status = status
        self.limits = limits
        self.unsafe = unsafe
        self.status_data = b""
        self.started = time.monotonic()
        self.stopped_by: str | None = None
        self.disk = (
            DiskWatch(
                writable,
                max_bytes=limits.disk_bytes,
                max_entries=limits.disk_entries,
                processes=self._proc,
            )
            if writable
            else None
        )

    def _status(self, data: bytes) -> None:
        """bwrap's status pipe: it names the sandbox's PID 1 first (then its exit code)."""
        self.status_data += data
        if self.process.reaper is None and (found := _CHILD_PID.search(self.status_data)):
            self.process.reaper = Reaper.of(int(found.group(1)), self.process)

    def _proc(self) -> str | None:
        """The /proc listing the sandbox's processes and only those (None unsandboxed)."""
        pid = None if self.unsafe else self.process.sandbox_pid
        if pid is None:
            return None
        inside = f"/proc/{pid}/root/proc"
        try:
            # Until bwrap has mounted the sandbox's /proc, this is the host's (as below).
            return None if os.stat(inside).st_dev == os.stat("/proc").st_dev else inside
        except OSError:
            return None

    def _processes(self) -> int:
        if self.unsafe:
            return len(_session_members(self.process.pid))
        # Its /proc/<pid>/root/proc lists the namespace's processes and only those, so
        # counting them costs what they number, not what the host runs.
        pid = self.process.sandbox_pid
        if pid is None:
            return 0
        inside = f"/proc/{pid}/root/proc"
        try:
            # bwrap reports its PID before it has mounted the sandbox's /proc: until then
            # this is the host's, which must not be counted as the sandbox's processes.
            if os.stat(inside).st_dev == os.stat("/proc").st_dev:
                return 0
            # Minus the reaper bwrap puts at PID 1.
            return sum(1 for name in os.listdir(inside) if name.isdigit()) - 1
        except OSError:
            return 0

    def _check(self) -> None:
        """Stop the process when it ran out of wall time or started too many processes."""
        if self.stopped_by is not None or self.process.poll() is not None:
            return
        if time.monotonic() - self.started >= self.limits.wall_seconds:
            self.stopped_by = "wall_seconds"
        elif self._processes() > self.limits.max_processes:
            self.stopped_by = "max_processes"
        elif self.disk is not None and self.disk.over():
            self.stopped_by = "disk_bytes"
        if self.stopped_by is not None:
            self.process.limit = self.stopped_by
            kill_tree(self.process)

    def watch(self) -> None:
        """For `spawn`: check until the process ends (reading bwrap's status on the way)."""
        selector = selectors.DefaultSelector()
        if self.status is not None:
            selector.register(self.status, selectors.EVENT_READ)
        try:
            while self.process.poll() is None:
                for key, _ in selector.select(WATCH_SECONDS):
                    data = os.read(key.fd, READ_CHUNK)
                    if not data:
                        selector.unregister(key.fd)
                    self._status(data)
                self._check()
                if not selector.get_map():
                    time.sleep(WATCH_SECONDS)
        finally:
            selector.close()
            if self.status is not None:
                with contextlib.suppress(OSError):
                    os.close(self.status)
            if self.process.reaper is not None:  # what the process left behind goes too
                self.process.reaper.kill()

    def collect(self, stdin: bytes | None) -> Outcome:
        """Wait for the process, reading its output concurrently; the Outcome."""
        process = self.process
        if stdin is not None and process.stdin is not None:
            threading.Thread(target=_feed, args=(process.stdin, stdin), daemon=True).start()
        assert process.stdout is not None and process.stderr is not None
        kept = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
        room = self.limits.output_bytes
        truncated = False
        selector = selectors.DefaultSelector()
        for fd in kept:
            selector.register(fd, selectors.EVENT_READ)
        if self.status is not None:
            selector.register(self.status, selectors.EVENT_READ)
        ended_at: float | None = None
        try:
            while selector.get_map():
                self._check()
                if ended_at is None and process.poll() is not None:
                    ended_at = time.monotonic()
                    # Unsandboxed, what it left running may hold the pipes open.
                    if self.unsafe:
                        kill_tree(process)
                if ended_at is not None and time.monotonic() - ended_at > DRAIN_SECONDS:
                    break
                for key, _ in selector.select(WATCH_SECONDS):
                    data = os.read(key.fd, READ_CHUNK)
                    if not data:
                        selector.unregister(key.fd)
                    elif key.fd == self.status:
                        self._status(data)
                    else:
                        kept[key.fd] += data[:room]
                        truncated = truncated or len(data) > room
                        room -= min(room, len(data))
        finally:
            selector.close()
        process.wait()
        stdout = bytes(kept[process.stdout.fileno()]).decode("utf-8", errors="replace")
        stderr = bytes(kept[process.stderr.fileno()]).decode("utf-8", errors="replace")
        return self._outcome(stdout, stderr, truncated)

    def _outcome(self, stdout: str, stderr: str, truncated: bool) -> Outcome:
        if self.stopped_by is not None:
            return Outcome(
                None,
                stdout,
                stderr,
                timed_out=self.stopped_by == "wall_seconds",
                output_truncated=truncated,
                limit=self.stopped_by,
            )
        code = self.process.returncode
        if self.unsafe:
            code = 128 - code if code < 0 else code  # as bwrap and the shell report it
        else:
            exited = _EXIT_CODE.search(self.status_data)
            if exited is None:
                # bwrap ended before the command did: it could not set the sandbox up.
                first = next((line for line in stderr.splitlines() if line.strip()), "")
                if first.startswith("bwrap: execvp"):  # the command itself was not found
                    return Outcome(127, stdout, stderr, output_truncated=truncated)
                raise SandboxUnavailable(
                    f"bubblewrap could not set up the sandbox: {first or f'exit {code}'}"
                )
            code = int(exited.group(1))
        limit = None
        if code == 128 + signal.SIGXCPU:
            limit = "cpu_seconds"
        elif code == 128 + signal.SIGXFSZ:
            limit = "file_bytes"
        elif code != 0 and _OUT_OF_MEMORY.search(stderr[-4096:]):
            limit = "memory_bytes"
        return Outcome(code, stdout, stderr, output_truncated=truncated, limit=limit)


def _feed(pipe: object, data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        pipe.write(data)  # type: ignore[attr-defined]
        pipe.close()  # type: ignore[attr-defined]
