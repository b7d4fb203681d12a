"""One progress bar for the commands that take a while, drawn only on a terminal."""

from __future__ import annotations

from django.core.management.base import OutputWrapper

#: Below this many steps the work is quick enough that a progress bar is only noise.
PROGRESS_THRESHOLD = 10
WIDTH = 30


def draw_progress(out: OutputWrapper, done: int, total: int, name: str) -> None:
    """Redraw the bar in place: `[####------] 3/10 name` (long names keep their end)."""
    if total < PROGRESS_THRESHOLD:
        return
    filled = WIDTH * done // total
    bar = "#" * filled + "-" * (WIDTH - filled)
    shown = name if len(name) <= 40 else "…" + name[-39:]
    out.write(f"\r\033[K[{bar}] {done}/{total} {shown}", ending="")
    out.flush()


def clear_progress(out: OutputWrapper) -> None:
    out.write("\r\033[K", ending="")
