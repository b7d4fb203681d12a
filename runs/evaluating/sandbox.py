"""A bubblewrap sandbox for everything an agent, or an eval's command, runs.

An agent's `Bash` is untrusted code. Run as it was, it read ANTHROPIC_API_KEY, SECRET_KEY and
DATABASE_URL from /proc/$PPID/environ, read the site's database, wrote anywhere, left
processes running after runevals ended and exhausted memory with a 300 MB stdout. Under
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
import functools
import math
import os
import re
import select
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: What programs need from the system, bound read-only where they are (or, for the merged
#: /usr layout's /bin → usr/bin links, recreated as the same links).
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: What programs read from /etc. An allow-list, like the environment: /etc also holds
#: /etc/shadow, /etc/ssl/private, package-manager credentials and the host's machine-id.
ETC_PATHS = (
    "alternatives",
    "bash.bashrc",
    "crypto-policies",
    "debian_version",
    "fonts",
    "gai.conf",
    "group",
    "host.conf",
    "hosts",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "locale.conf",
    "localtime",
    "magic",
    "magic.mime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "perl",
    "pki/ca-trust",
    "pki/tls/certs",
    "profile",
    "protocols",
    "python3",
    f"python{sys.version_info.major}.{sys.version_info.minor}",
    "resolv.conf",
    "services",
    "shells",
    "ssl/certs",
    "ssl/openssl.cnf",
    "terminfo",
    "timezone",
)
#: The only variables inherited from runevals' own environment; everything else a command
#: gets is named by its caller. An allow-list because a deny-list leaked AWS_*, *_TOKEN,
#: *_PAT and *_ID secrets that no pattern anticipated.
INHERITED_VARIABLES = ("LANG", "LC_ALL", "TERM", "TZ")
STANDARD_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
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


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 120.0
    cpu_seconds: int = 120
    memory_bytes: int = 2 * 1024**3
    output_bytes: int = 1024**2  # stdout+stderr kept; the rest read and dropped, flagged
    max_processes: int = 256
    file_bytes: int = 1024**3  # the largest file a command may write
    tmp_bytes: int = 256 * 1024**2  # each of /tmp, /var/tmp and /dev/shm (memory-backed)
    #: Commands run at a lower priority than runevals and the sandbox's PID 1, so that the
    #: watch and the kill still get the CPU against a fork bomb: at equal priority, killing
    #: one waited ~0.9 s behind 300 runnable processes on two cores, by then 2,500 of them.
    niceness: int = 10


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


def describe(limit: str, limits: Limits) -> str:
    """What hitting `limit` means, for a tool error or a grader's evidence."""
    return {
        "wall_seconds": f"it ran longer than {limits.wall_seconds:g} s",
        "cpu_seconds": f"it used more than {limits.cpu_seconds} s of CPU time",
        "memory_bytes": f"it ran out of memory (limit {_size(limits.memory_bytes)} per process)",
        "max_processes": f"it started more than {limits.max_processes} processes",
        "file_bytes": f"it wrote a file larger than {_size(limits.file_bytes)}",
    }.get(limit, limit)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} bytes"


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


# --- what the sandbox is made of ----------------------------------------------------------


def _python_prefixes() -> list[str]:
    """The running Python's install (and venv), so `python3` works inside, read-only.

    Here Python may live under /root (pyenv); binding just its prefix shows that folder and
    nothing else of /root. A prefix that holds the current folder (the project, when
    runevals is run from it) is never bound: the project's db.sqlite3 and .env are there.
    """
    here = Path.cwd().resolve()
    found: list[str] = []
    for raw in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        prefix = Path(raw).resolve()
        if prefix == Path("/") or here.is_relative_to(prefix):
            continue
        if any(prefix.is_relative_to(system) for system in SYSTEM_PATHS):
            continue
        if prefix.is_dir() and str(prefix) not in found:
            found.append(str(prefix))
    return found


def sandbox_path() -> str:
    """PATH inside the sandbox: the running Python's bin folders, then the standard ones."""
    folders = [str(Path(sys.prefix) / "bin"), str(Path(sys.base_prefix) / "bin"), *STANDARD_PATH]
    return ":".join(dict.fromkeys(folders))


def allowed_environment(extra: Mapping[str, str] | None = None, *, home: Path) -> dict[str, str]:
    """PATH, LANG, LC_ALL, TERM, TZ, HOME (= `home`), then `extra`; nothing else inherited."""
    env = {"PATH": sandbox_path(), "HOME": str(home), "LANG": "C.UTF-8"}
    env.update({name: os.environ[name] for name in INHERITED_VARIABLES if name in os.environ})
    env.update(extra or {})
    for name, value in env.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ValueError(f"environment variable {name!r} must be text")
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ValueError(f"environment variable {name!r} cannot be set (NUL or '=')")
    return env


@functools.cache
def _bwrap() -> str | None:
    return shutil.which("bwrap") or (
        "/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None
    )


@functools.cache
def _prlimit() -> str | None:
    return shutil.which("prlimit") or (
        "/usr/bin/prlimit" if os.access("/usr/bin/prlimit", os.X_OK) else None
    )


@functools.cache
def _bwrap_options() -> str:
    """bwrap's --help, to use the hardening options this version has (--disable-userns: 0.8)."""
    binary = _bwrap()
    if binary is None:
        return ""
    done = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
    return done.stdout + done.stderr


@functools.cache
def _system_args() -> tuple[str, ...]:
    args: list[str] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in ETC_PATHS:
        path = f"/etc/{name}"
        if os.path.lexists(path):
            args += ["--ro-bind-try", path, path]
    for prefix in _python_prefixes():
        args += ["--ro-bind", prefix, prefix]
    return tuple(args)


def sandboxed_argv(
    argv: Sequence[str],
    *,
    folder: Path,
    network: bool = False,
    binds: Sequence[tuple[Path, Path]] = (),
    ro_binds: Sequence[tuple[Path, Path]] = (),
    env: Mapping[str, str] | None = None,
    tmp_bytes: int = Limits.tmp_bytes,
) -> list[str]:
    """The bwrap command line that runs `argv` in `folder`, sandboxed (see the module)."""
    binary = _bwrap()
    if binary is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed")
    options = _bwrap_options()
    folder = Path(folder).resolve()
    args = [
        binary,
        "--die-with-parent",
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
        "--new-session",
        # As root bwrap would otherwise keep every capability: mount, ptrace, raw sockets…
        "--cap-drop",
        "ALL",
    ]
    if "--disable-userns" in options:
        args.append("--disable-userns")
    if not network:
        args.append("--unshare-net")
    args += _system_args()
    args += ["--proc", "/proc", "--dev", "/dev"]
    for scratch in ("/tmp", "/var/tmp", "/dev/shm"):
        # tmpfs is memory: unsized, one `cat /dev/zero > /tmp/x` would fill the host's RAM.
        if "--size" in options:
            args += ["--size", str(tmp_bytes)]
        args += ["--tmpfs", scratch]
    for source, target in ro_binds:
        args += ["--ro-bind", str(source), str(target)]
    for source, target in binds:
        args += ["--bind", str(source), str(target)]
    # The folder last, so it is writable even under a tmpfs or bind above; then the root
    # (bwrap's own tmpfs, holding the mount points) is made read-only.
    args += ["--bind", str(folder), str(folder), "--remount-ro", "/", "--chdir", str(folder)]
    if env is not None:
        args.append("--clearenv")
        for name, value in env.items():
            args += ["--setenv", name, value]
    return [*args, "--", *argv]


def _limit_args(limits: Limits) -> list[str]:
    binary = _prlimit()
    if binary is None:
        raise SandboxUnavailable("prlimit (util-linux) is not installed: limits cannot be set")
    cpu = max(1, int(math.ceil(limits.cpu_seconds)))
    # Not RLIMIT_AS: node and the JVM reserve far more address space than they use, and
    # would not start. RLIMIT_DATA counts what is actually allocated (brk and private
    # writable mappings). No RLIMIT_NPROC: it counts every process of the user on the host
    # (and does not apply to root), so the watch below counts the sandbox's own instead.
    return [
        binary,
        f"--cpu={cpu}:{cpu + 1}",
        f"--data={int(limits.memory_bytes)}",
        f"--fsize={int(limits.file_bytes)}",
        "--core=0",
        "--",
    ]


@functools.cache
def sandbox_problem() -> str | None:
    """None when bubblewrap can sandbox commands here; else one line saying why not."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux and bubblewrap; this is {sys.platform}"
    if _bwrap() is None:
        return "bubblewrap (bwrap) is not installed (apt-get install bubblewrap)"
    if _prlimit() is None:
        return "prlimit (util-linux) is not installed, so limits cannot be set"
    with tempfile.TemporaryDirectory(prefix="evalsite-sandbox-check-") as scratch:
        folder = Path(scratch)
        env = allowed_environment(home=folder)
        argv = [*_limit_args(Limits()), *sandboxed_argv(["sh", "-c", "true"], folder=folder)]
        try:
            done = subprocess.run(
                argv, cwd=folder, env=env, capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap could not be started: {exc}"
    if done.returncode != 0:
        detail = next((line for line in done.stderr.splitlines() if line.strip()), "")
        return (
            f"bubblewrap cannot create a sandbox here ({detail or f'exit {done.returncode}'});"
            " it needs unprivileged user namespaces"
        )
    return None


# --- running ------------------------------------------------------------------------------


class SandboxedProcess(subprocess.Popen[bytes]):
    """A process started by `spawn`: its own process group; `limit` says what stopped it."""

    limit: str | None = None
    #: The sandbox's PID 1 once bwrap has reported it (None unsandboxed, or not yet).
    reaper: _Reaper | None = None
    #: Started without bwrap: kill_tree must then hunt down its session by hand.
    unsafe: bool = True

    @property
    def sandbox_pid(self) -> int | None:
        """The host PID of the sandbox's PID 1 (the reaper bwrap puts there)."""
        return self.reaper.pid if self.reaper else None


class _Reaper:
    """The sandbox's PID 1, held through a pidfd: killing it takes the whole PID namespace
    down, and a pidfd can never signal a stranger that was given the PID since."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd: int | None = fd
        self.lock = threading.Lock()

    @classmethod
    def of(cls, pid: int, bwrap: subprocess.Popen[bytes]) -> _Reaper | None:
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
        return _Supervisor(process, status, limits, unsafe=unsafe).collect(stdin)
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
    supervisor = _Supervisor(process, status, limits, unsafe=unsafe)
    threading.Thread(target=supervisor.watch, name="sandbox-watch", daemon=True).start()
    return process


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


class _Supervisor:
    """Enforces wall time and the process count on one process; collects bounded output."""

    def __init__(
        self, process: SandboxedProcess, status: int | None, limits: Limits, *, unsafe: bool
    ) -> None:
        self.process = process
        self.status = status
        self.limits = limits
        self.unsafe = unsafe
        self.status_data = b""
        self.started = time.monotonic()
        self.stopped_by: str | None = None

    def _status(self, data: bytes) -> None:
        """bwrap's status pipe: it names the sandbox's PID 1 first (then its exit code)."""
        self.status_data += data
        if self.process.reaper is None and (found := _CHILD_PID.search(self.status_data)):
            self.process.reaper = _Reaper.of(int(found.group(1)), self.process)

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
