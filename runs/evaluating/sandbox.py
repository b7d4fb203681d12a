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
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from .processes import (  # re-exported: callers know the sandbox, not its parts
    LimitExceeded,
    Limits,
    Outcome,
    SandboxedProcess,
    SandboxError,
    SandboxUnavailable,
    Supervisor,
    describe,
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


# --- running (the processes themselves: runs/evaluating/processes.py) -------------------


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
        return Supervisor(process, status, limits, unsafe=unsafe).collect(stdin)
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
    supervisor = Supervisor(process, status, limits, unsafe=unsafe)
    threading.Thread(target=supervisor.watch, name="sandbox-watch", daemon=True).start()
    return process
