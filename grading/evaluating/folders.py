"""The workspace side of runevals: a per-skill lock and the skill's iteration folders."""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HARNESS = "evalsite-runevals"
#: In an iteration folder: the spending limit stopped it with runs not played (the reason).
BUDGET_STOPPED = ".budget-stopped"
ITERATION_DIR = re.compile(r"^iteration-(\d+)$")


class LockHeld(Exception):
    """Another runevals holds the skill's lock; the message says who."""


class SkillLock:
    """An exclusive, non-blocking lock per skill in the workspace (flock: freed on exit)."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / ".runevals.lock"
        self.handle: Any = None

    def __enter__(self) -> SkillLock:
        self.handle = open(self.path, "a+")  # noqa: SIM115 - held for the lock's lifetime
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.handle.seek(0)
            holder = self.handle.read().strip() or "another process"
            self.handle.close()
            raise LockHeld(f"{self.path.parent.name} is locked by {holder}") from None
        self.handle.seek(0)
        self.handle.truncate()
        started = datetime.now(UTC).isoformat(timespec="seconds")
        self.handle.write(f"runevals pid {os.getpid()} on {socket.gethostname()} since {started}")
        self.handle.flush()
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.seek(0)
        self.handle.truncate()
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def iteration_folders(skill_folder: Path) -> list[tuple[int, Path]]:
    found = []
    if skill_folder.is_dir():
        for child in skill_folder.iterdir():
            if (match := ITERATION_DIR.match(child.name)) and child.is_dir():
                found.append((int(match.group(1)), child))
    return sorted(found)


def unfinished_iteration(skill_folder: Path) -> Path | None:
    """The newest iteration this tool started and never finished: no benchmark.json, or
    one written when the spending limit stopped it (imported with the runs that finished)."""
    for _, folder in reversed(iteration_folders(skill_folder)):
        conditions = folder / "conditions.json"
        if not conditions.is_file():
            continue
        recorded = json.loads(conditions.read_text(encoding="utf-8"))
        started_here = recorded.get("harness") == HARNESS or "runevals" in recorded
        finished = (folder / "benchmark.json").exists() and not (folder / BUDGET_STOPPED).exists()
        if started_here and not finished:
            return folder
        return None
    return None
