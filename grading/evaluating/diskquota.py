"""The run's disk quota: what a sandboxed command's writable folders hold, watched.

bubblewrap binds the task folder from the host's disk, where RLIMIT_FSIZE limits one file
but nothing limits their sum; a size-capped mount would hide the folder from the graders
that read it afterwards. So the supervisor measures it while a command runs and stops the
command once it is over (`Limits.disk_bytes`, `Limits.disk_entries`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .processes import Limits


class DiskWatch:
    """What the folders a command may write hold, measured now and then while it runs.

    A walk that never follows a link; its cost grows with the folder, so the next walk
    waits at least ten times as long as this one took.
    """

    MIN_INTERVAL = 0.25

    def __init__(self, folders: Sequence[Path], limits: Limits) -> None:
        self.folders = list(folders)
        self.limits = limits
        self.next_at = 0.0

    def over(self) -> bool:
        now = time.monotonic()
        if now < self.next_at:
            return False
        exceeded = folder_usage_exceeds(
            self.folders, max_bytes=self.limits.disk_bytes, max_entries=self.limits.disk_entries
        )
        took = time.monotonic() - now
        self.next_at = time.monotonic() + max(self.MIN_INTERVAL, 10 * took)
        return exceeded


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
