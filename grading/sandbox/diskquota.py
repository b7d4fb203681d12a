"""The run's disk quota: what a sandboxed command's writable folders hold, watched.

bubblewrap binds the task folder from the host's disk, where RLIMIT_FSIZE limits one file
but nothing limits their sum; a size-capped mount would hide the folder from the graders
that read it afterwards. So the supervisor measures it while a command runs and stops the
command once it is over (the `max_bytes` and `max_entries` it is given: `Limits.disk_bytes`
and `Limits.disk_entries`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path


class DiskWatch:
    """What the folders a command may write hold, measured now and then while it runs.

    A walk that never follows a link, plus the files its processes hold open after deleting
    them (space a walk cannot see, and a way round the quota otherwise: RLIMIT_FSIZE caps
    each such file, not their number). Its cost grows with the folder, so the next walk
    waits at least ten times as long as this one took.
    """

    MIN_INTERVAL = 0.25

    def __init__(
        self,
        folders: Sequence[Path],
        *,
        max_bytes: int,
        max_entries: int,
        processes: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.folders = list(folders)
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        #: The /proc that lists the command's processes (the sandbox's own), when known.
        self.processes = processes
        # Not at once: a command that ends within the interval cannot write much, and most
        # (a git command, a short check) do; walking the folder for each was measurable.
        self.next_at = time.monotonic() + self.MIN_INTERVAL

    def over(self) -> bool:
        now = time.monotonic()
        if now < self.next_at:
            return False
        room = self.max_bytes - deleted_but_open_bytes(self.processes())
        exceeded = room < 0 or folder_usage_exceeds(
            self.folders, max_bytes=room, max_entries=self.max_entries
        )
        took = time.monotonic() - now
        self.next_at = time.monotonic() + max(self.MIN_INTERVAL, 10 * took)
        return exceeded


def deleted_but_open_bytes(proc: str | None) -> int:
    """Blocks held by files the processes listed in `proc` keep open after unlinking them
    (each counted once, however many descriptors share it)."""
    if proc is None:
        return 0
    seen: set[tuple[int, int]] = set()
    held = 0
    try:
        pids = [name for name in os.listdir(proc) if name.isdigit()]
    except OSError:
        return 0
    for pid in pids:
        fds = f"{proc}/{pid}/fd"
        try:
            names = os.listdir(fds)
        except OSError:
            continue
        for name in names:
            try:
                if not os.readlink(f"{fds}/{name}").endswith(" (deleted)"):
                    continue
                info = os.stat(f"{fds}/{name}")  # the open file itself; stat opens nothing
            except OSError:
                continue
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                held += info.st_blocks * 512
    return held


def folder_usage_exceeds(folders: Sequence[Path], *, max_bytes: int, max_entries: int) -> bool:
    """Whether `folders` together hold more than `max_bytes` (allocated blocks, so a sparse
    file counts what it takes) or `max_entries` files and folders; stops counting once over."""
    used = entries = 0
    pending: list[str] = [str(folder) for folder in folders]
    while pending:
        try:
            with os.scandir(pending.pop()) as listing:
                for entry in listing:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    entries += 1
                    used += info.st_blocks * 512
                    if used > max_bytes or entries > max_entries:
                        return True
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
        except OSError:
            continue  # gone, or not readable: it holds nothing we could count
    return False
