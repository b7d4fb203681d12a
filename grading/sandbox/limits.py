"""What a sandboxed command may use (`Limits`), and what hitting each limit means.

The defaults suit an agent's command or an eval's check; the disk quota's come from the
operator's settings where Django is configured. `describe` is the sentence a tool error or
a grader's evidence gives when a limit stopped a command.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def _setting(name: str, default: int) -> int:
    """An operator's setting for a default limit, where Django is configured."""
    from django.conf import settings

    return int(getattr(settings, name, default)) if settings.configured else default


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 120.0
    cpu_seconds: int = 120
    memory_bytes: int = 2 * 1024**3
    output_bytes: int = 1024**2  # stdout+stderr kept; the rest read and dropped, flagged
    max_processes: int = 256
    file_bytes: int = 1024**3  # the largest file a command may write
    tmp_bytes: int = 256 * 1024**2  # each of /tmp, /var/tmp and /dev/shm (memory-backed)
    #: What the task folder (and every writable bind) may hold in all, counted across the
    #: run's commands since the folder keeps what each wrote: a per-file limit alone let one
    #: command write 3 GB to the host's disk. Watched, like the process count.
    disk_bytes: int = field(
        default_factory=lambda: _setting("EVALSITE_RUN_DISK_BYTES", 2 * 1024**3)
    )
    #: Files and folders it may hold: a million empty files fill a disk's inodes instead.
    disk_entries: int = field(default_factory=lambda: _setting("EVALSITE_RUN_DISK_FILES", 200_000))
    #: Commands run at a lower priority than runevals and the sandbox's PID 1, so that the
    #: watch and the kill still get the CPU against a fork bomb: at equal priority, killing
    #: one waited ~0.9 s behind 300 runnable processes on two cores, by then 2,500 of them.
    niceness: int = 10


def describe(limit: str, limits: Limits) -> str:
    """What hitting `limit` means, for a tool error or a grader's evidence."""
    return {
        "wall_seconds": f"it ran longer than {limits.wall_seconds:g} s",
        "cpu_seconds": f"it used more than {limits.cpu_seconds} s of CPU time",
        "memory_bytes": f"it ran out of memory (limit {_size(limits.memory_bytes)} per process)",
        "max_processes": f"it started more than {limits.max_processes} processes",
        "file_bytes": f"it wrote a file larger than {_size(limits.file_bytes)}",
        "disk_bytes": (
            f"the task folder grew past {_size(limits.disk_bytes)} or "
            f"{limits.disk_entries:,} files (the run's disk quota)"
        ),
    }.get(limit, limit)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} bytes"
