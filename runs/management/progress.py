"""One progress display for the commands that take a while: a bar on a terminal (rich), plain
lines elsewhere (cron, a pipe, a log file), so a log says what happened and a person sees
how far it is.

    with CommandProgress(self.stdout, minimum=10) as progress:
        import_workspace(paths, progress=progress.step)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.management.base import OutputWrapper

if TYPE_CHECKING:
    from rich.progress import Progress

#: Below this many steps the work is quick enough that a bar is only noise.
PROGRESS_THRESHOLD = 10


class _Stream:
    """An OutputWrapper as rich's file: OutputWrapper.write adds a newline rich does not want."""

    def __init__(self, out: OutputWrapper):
        self.out = out

    def write(self, text: str) -> int:
        self.out.write(text, ending="")
        return len(text)

    def flush(self) -> None:
        self.out.flush()

    def isatty(self) -> bool:
        return self.out.isatty()


class CommandProgress:
    """Steps of known total: `step(done, total, text)`, or `line(text)` for a line to keep.

    On a terminal the bar redraws in place and lines are printed above it; the bar is gone
    when the work is done. Elsewhere each step is one line `[done/total] text`, unless
    `lines` is False. Work of fewer than `minimum` steps shows no bar and no step lines.
    """

    def __init__(self, out: OutputWrapper, *, minimum: int = 0, lines: bool = True):
        self.out = out
        self.minimum = minimum
        self.lines = lines
        self.terminal = out.isatty()
        self._bar: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> CommandProgress:
        if self.terminal:
            # rich takes 0.15 s to import: only a terminal, which shows the bar, pays it.
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            console = Console(file=_Stream(self.out), force_terminal=True)  # type: ignore[arg-type]
            self._bar = Progress(
                TextColumn("[progress.description]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.stop()

    def step(self, done: int, total: int, text: str) -> None:
        if total < self.minimum:
            return
        if self._bar is None:
            if self.lines:
                self.out.write(f"[{done}/{total}] {text}")
            return
        shown = text if len(text) <= 40 else "…" + text[-39:]
        if self._task is None:
            self._task = self._bar.add_task(shown, total=total)
            self._bar.start()
        self._bar.update(self._task, completed=done, total=total, description=shown)

    def line(self, text: str) -> None:
        """A line that stays (a finished run's result), above the bar on a terminal."""
        if self._bar is not None and self._task is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        else:
            self.out.write(text)
