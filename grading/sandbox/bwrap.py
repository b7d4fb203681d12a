"""The bubblewrap command line: what a sandboxed command sees (a read-only system, the
`/etc` files programs read, the running Python, its task folder), its environment (an
allow-list), its limits (through prlimit), and whether bubblewrap can run here at all.
`sandbox` starts processes with it.
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from .limits import Limits
from .processes import SandboxUnavailable

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


def limit_args(limits: Limits) -> list[str]:
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
        argv = [*limit_args(Limits()), *sandboxed_argv(["sh", "-c", "true"], folder=folder)]
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
