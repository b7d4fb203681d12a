"""A bubblewrap sandbox for everything an agent, or an eval's command, runs.

An agent's `Bash` is untrusted code. Run bare, it could read ANTHROPIC_API_KEY, SECRET_KEY
and DATABASE_URL from /proc/$PPID/environ, read the site's database, write anywhere, leave
processes running after runevals ended and exhaust memory with a 300 MB stdout. Under
`run` and `spawn` a command sees:

- a read-only system: /usr (and the /bin, /lib… links into it), the /etc files programs
  read (`ETC_PATHS`: no /etc/shadow, no /etc/ssl/private) and the running Python's prefix —
  never the project folder (db.sqlite3, .env), the workspace's other runs, /root, /home,
  /opt, /var, /run or the host's /proc;
- its task folder, bound read-write at its own path: the only writable place besides a
  private, size-limited /tmp, /var/tmp and /dev/shm, all gone when it ends;
- fresh user (no capabilities, no further user namespaces), PID, IPC, UTS, cgroup and —
  unless `network=True` — network namespaces (loopback only), a new session (so it cannot
  push keystrokes into our terminal), and a /proc that shows only its own processes;
- an empty environment plus an allow-list (`allowed_environment`). bwrap itself is started
  with that environment too: its reaper is PID 1 inside, and /proc/1/environ is readable.

Limits apply per command (`Limits`): wall time (the namespace's PID 1 is killed, which kills
every process in it), CPU seconds, data memory and file size per process (setrlimit through
`prlimit`, inherited by everything it starts), a process count (watched), and an output
budget: stdout and stderr are read concurrently in bounded chunks, at most `output_bytes`
are kept and the rest is read and dropped.

Where bubblewrap cannot run, `sandbox_problem()` says why in one line; runevals then refuses
to start unless given `--unsafe-no-sandbox`, which runs commands with the same limits but no
isolation (`unsafe=True`, or `unsandboxed()` around a whole run). Never a silent downgrade:
`run` raises SandboxUnavailable rather than run a command unsandboxed.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from .bwrap import (  # re-exported: callers know the sandbox, not its parts
    allowed_environment,
    sandbox_path,
    sandbox_problem,
    sandboxed_argv,
)
from .bwrap import limit_args as _limit_args
from .limits import Limits, describe  # re-exported: callers know the sandbox, not its parts
from .processes import (  # re-exported: callers know the sandbox, not its parts
    LimitExceeded,
    Outcome,
    SandboxedProcess,
    SandboxError,
    SandboxUnavailable,
    Supervisor,
    kill_tree,
)

__all__ = [
    "LimitExceeded",
    "Limits",
    "Outcome",
    "SandboxError",
    "SandboxUnavailable",
    "SandboxedProcess",
    "allowed_environment",
    "describe",
    "is_unsandboxed",
    "kill_tree",
    "run",
    "sandbox_path",
    "sandbox_problem",
    "sandboxed_argv",
    "spawn",
    "unsandboxed",
]

# --- the process-wide switch for --unsafe-no-sandbox --------------------------------------

_unsandboxed = False


def is_unsandboxed() -> bool:
    """Whether commands run without bwrap (inside `unsandboxed()`, i.e. --unsafe-no-sandbox)."""
    return _unsandboxed


@contextlib.contextmanager
def unsandboxed(active: bool = True) -> Iterator[None]:
    """Within: callers that do not say otherwise run commands with `unsafe=True`.

    Process-wide on purpose: the decision is the operator's, for the whole runevals
    invocation, and it must reach every tool and grader of every worker thread.
    """
    global _unsandboxed
    before = _unsandboxed
    _unsandboxed = active or before
    try:
        yield
    finally:
        _unsandboxed = before


# --- running (the command line: bwrap.py; watching the process: processes.py) -------------------


def _launch(
    argv: Sequence[str],
    *,
    folder: Path,
    env: Mapping[str, str],
    limits: Limits,
    network: bool,
    binds: Sequence[tuple[Path, Path]],
    ro_binds: Sequence[tuple[Path, Path]],
    unsafe: bool,
    stdin: int,
    stderr: int,
) -> tuple[SandboxedProcess, int | None]:
    """(the process, the read end of bwrap's status pipe or None when unsandboxed)."""
    env = dict(env)
    folder = Path(folder)
    if not folder.is_dir():
        raise SandboxError(f"the task folder {folder} does not exist")
    command = _limit_args(limits)
    # Inside bwrap, so that its reaper (PID 1, whose death takes the namespace down) keeps
    # runevals' priority: at the command's, killing it waited behind the fork bomb too.
    if limits.niceness:
        argv = ["nice", "-n", str(limits.niceness), *argv]
    status_read = status_write = None
    if unsafe:
        command += list(argv)
    else:
        if (problem := sandbox_problem()) is not None:
            raise SandboxUnavailable(problem)
        status_read, status_write = os.pipe()
        inner = sandboxed_argv(
            argv,
            folder=folder,
            network=network,
            binds=binds,
            ro_binds=ro_binds,
            env=env,
            tmp_bytes=limits.tmp_bytes,
        )
        # bwrap reports the sandbox's PID 1 and the command's exit status on this pipe.
        command += [inner[0], "--json-status-fd", str(status_write), *inner[1:]]
    try:
        process = SandboxedProcess(
            command,
            cwd=folder,
            # bwrap's own environment too: its reaper is PID 1 inside, /proc/1/environ.
            env=env,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=stderr,
            pass_fds=() if status_write is None else (status_write,),
            # A group of its own, so killing it never touches runevals, and kill_tree can
            # reach what it started (unsandboxed; sandboxed, the PID namespace does that).
            start_new_session=True,
        )
    except BaseException:
        if status_read is not None:
            os.close(status_read)
        raise
    finally:
        if status_write is not None:
            os.close(status_write)
    process.unsafe = unsafe
    return process, status_read


def run(
    argv: Sequence[str],
    *,
    folder: Path,
    env: Mapping[str, str],
    limits: Limits = Limits(),  # noqa: B008 - frozen, so one shared default is safe
    network: bool = False,
    stdin: bytes | None = None,
    binds: Sequence[tuple[Path, Path]] = (),
    ro_binds: Sequence[tuple[Path, Path]] = (),
    unsafe: bool = False,
) -> Outcome:
    """Run `argv` in `folder` with `env` and `limits`, sandboxed unless `unsafe`.

    Raises SandboxUnavailable when bwrap cannot set the sandbox up; whatever the command
    does (fails, hangs, floods, forks) comes back as an Outcome.
    """
    process, status = _launch(
        argv,
        folder=folder,
        env=env,
        limits=limits,
        network=network,
        binds=binds,
        ro_binds=ro_binds,
        unsafe=unsafe,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        writable = [Path(folder), *(Path(source) for source, _ in binds)]
        supervisor = Supervisor(process, status, limits, unsafe=unsafe, writable=writable)
        return supervisor.collect(stdin)
    finally:
        kill_tree(process)
        if status is not None:
            with contextlib.suppress(OSError):
                os.close(status)


def spawn(
    argv: Sequence[str],
    *,
    folder: Path,
    env: Mapping[str, str],
    limits: Limits,
    network: bool = False,
    binds: Sequence[tuple[Path, Path]] = (),
    ro_binds: Sequence[tuple[Path, Path]] = (),
    unsafe: bool = False,
    stdin: int = subprocess.PIPE,
    stderr: int = subprocess.PIPE,
) -> SandboxedProcess:
    """A long-lived sandboxed process (the agent CLI); stdin, stdout, stderr are pipes.

    The caller reads stdout (and stderr, or passes `stderr=subprocess.DEVNULL`/`STDOUT`)
    and calls `kill_tree(proc)` when done. A watch thread kills it at `wall_seconds` or past
    `max_processes` and sets `proc.limit`; CPU, memory and file limits apply as in `run`;
    `output_bytes` is the reader's to enforce. The thread that calls spawn must outlive the
    process: bwrap's --die-with-parent follows the thread that started it.
    """
    process, status = _launch(
        argv,
        folder=folder,
        env=env,
        limits=limits,
        network=network,
        binds=binds,
        ro_binds=ro_binds,
        unsafe=unsafe,
        stdin=stdin,
        stderr=stderr,
    )
    writable = [Path(folder), *(Path(source) for source, _ in binds)]
    supervisor = Supervisor(process, status, limits, unsafe=unsafe, writable=writable)
    threading.Thread(target=supervisor.watch, name="sandbox-watch", daemon=True).start()
    return process
