"""What every bench prints: its header (date, HEAD, machine, load), verdicts, percentiles.

The header makes a pasted result traceable to the code and the machine that produced it.
"""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
from datetime import UTC, datetime

from bench.django_process import PROJECT


def git_head() -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=PROJECT, capture_output=True, text=True
        ).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "(no commits yet)"
    if git("status", "--porcelain", "--untracked-files=no") or not git("rev-parse", "HEAD"):
        head += " (with uncommitted changes)"
    return head


def machine() -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"nproc {cpus}, {platform.machine()}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )


def print_header(title: str) -> None:
    """`evalsite <title>, <date> UTC`, then the git HEAD and the machine."""
    print(f"evalsite {title}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"git HEAD: {git_head()}")
    print(f"machine: {machine()}")


def load_note() -> str:
    load = os.getloadavg()[0]
    cpus = os.cpu_count() or 1
    busy = "  (the machine is busy: figures will be noisy)" if load > 0.5 * cpus else ""
    return f"load average {load:.2f}{busy}"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def percentile(values: list[float], share: float) -> float:
    """The `share` quantile of `values` (nearest rank), e.g. 0.95 for p95."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]
