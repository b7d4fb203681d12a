"""What every CLI harness's conversation shares: one sandboxed CLI process per round, its
stdout read as JSON lines within caps, and the run's usage taken from the API proxy's tally.

Each harness (claude_code/, opencode/, codex/, cline/, gemini/) subclasses `CliSession` and
says only what differs: the command line, the environment, how its events become the
conversation, and what a round's end means. `play_round` runs the command — spawned in the
sandbox, stderr's tail kept for the error line, stdout read to its end or its cap, everything
it started killed — and raises the harness's own error (an APIError, so the runner records
the run as errored) when the sandbox could not start it, its output passed the cap, or a
limit stopped it.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading import sandbox
from grading.graders.rustregex import rust_search

from .apibudget import Lease
from .claude_code.stream import StreamTooLarge, drain, read_events
from .conversation import Conversation
from .harness import Dispatch

_USAGE = ("calls", "input", "output", "cache_creation", "cache_read")


@dataclass
class RoundOutput:
    """What one CLI process left: its JSON lines, exit status and stderr's last lines."""

    events: list[dict[str, Any]]
    returncode: int | None
    errors: deque[str]

    def error_tail(self) -> str:
        """stderr's last lines on one line (at most 300 characters), else the exit status."""
        return " ".join(" ".join(self.errors).split())[:300] or f"exit {self.returncode}"


def round_limits(seconds: float, **more: Any) -> sandbox.Limits:
    """A round's limits: its wall time, and CPU at twice that (plus 10 s): CPU counts every
    thread of the CLI and of what the agent runs, so a busy round may use more than its wall
    time, and CPU only stops what wall time would take too long to."""
    return sandbox.Limits(wall_seconds=seconds, cpu_seconds=2 * int(seconds) + 10, **more)


class CliSession(Conversation):
    """The shared conversation (conversation.py), each round played by one CLI process.

    `Conversation._play` decides what follows a round (scripted turns, the responder,
    stopping); `_say` keeps the next prompt in `_pending` for the subclass's `_round`.
    """

    #: The harness's error: `error(message, timed_out=False)`, an anthropic.APIError.
    error: Callable[..., Exception]

    def __init__(
        self,
        harness: Any,
        dispatch: Dispatch,
        *,
        home: Path,
        socket: Path,
        lease: Lease,
    ) -> None:
        super().__init__(
            dispatch.client, dispatch.agent, matches=rust_search, result=dispatch.result
        )
        self.harness = harness
        self.dispatch = dispatch
        self.home = home
        self.socket = socket
        self.lease = lease
        self.rounds: list[dict[str, Any]] = []
        self._pending = ""
        self._synced = dict.fromkeys(_USAGE, 0)
        self._api_seconds = 0.0

    def _say(self, text: str, round_: int, origin: dict[str, Any] | None = None) -> None:
        super()._say(text, round_, origin)
        self._pending = text

    def play_round(
        self,
        argv: Sequence[str],
        *,
        round_: int,
        env: dict[str, str],
        limits: sandbox.Limits,
        ro_binds: Sequence[tuple[Path, Path]] = (),
        stdin_text: str | None = None,
        keep: Callable[[dict[str, Any]], bool] | None = None,
    ) -> RoundOutput:
        """Run one round's CLI in the sandbox (the task folder and `home` writable, the API
        socket's folder and `ro_binds` read-only); `stdin_text` is written to its stdin
        (else it gets none), `keep` drops the lines it refuses as they are read."""
        try:
            process = sandbox.spawn(
                argv,
                folder=self.dispatch.env,
                env=env,
                limits=limits,
                binds=[(self.home, self.home)],
                ro_binds=[(self.socket, self.socket), *ro_binds],
                unsafe=not self.harness.sandboxed,
                stdin=subprocess.DEVNULL if stdin_text is None else subprocess.PIPE,
            )
        except sandbox.SandboxError as exc:
            raise self.error(f"round {round_}: {exc}") from None
        errors: deque[str] = deque(maxlen=20)
        threads = [threading.Thread(target=drain, args=(process.stderr, errors), daemon=True)]
        if stdin_text is not None:
            threads.append(
                threading.Thread(target=_send, args=(process.stdin, stdin_text), daemon=True)
            )
        for thread in threads:
            thread.start()
        try:
            events = [e for e in read_events(process.stdout) if keep is None or keep(e)]
            process.wait()
        except StreamTooLarge as exc:
            raise self.error(f"round {round_}: {exc}; stopped") from None
        finally:
            sandbox.kill_tree(process)
            for thread in threads:
                thread.join(timeout=5)
        if process.limit:
            stopped = sandbox.describe(process.limit, limits)
            raise self.error(
                f"round {round_}: the CLI was stopped: {stopped}",
                timed_out=process.limit == "wall_seconds",
            )
        return RoundOutput(events, process.returncode, errors)

    def sync_usage(self) -> None:
        """Bring the run's usage up to what the proxy counted (the CLI's every call)."""
        tally = self.lease.tally
        usage = self.result.usage
        for name in _USAGE:
            now = getattr(tally, name)
            setattr(usage, name, getattr(usage, name) + now - self._synced[name])
            self._synced[name] = now
        # The runner's client counts time spent waiting on the API (the benchmark's "own
        # time" is the rest); the CLI's calls bypass it, so they are added here.
        if hasattr(self.dispatch.client, "seconds"):
            self.dispatch.client.seconds += tally.upstream_seconds - self._api_seconds
        self._api_seconds = tally.upstream_seconds

    def api_record(self) -> dict[str, Any]:
        """The proxy's count of the run's calls, for the harness's own record file."""
        tally = self.lease.tally
        return {
            "calls": tally.calls,
            "tokens": tally.tokens,
            "requests": tally.requests,
            "refused": tally.refused,
            "refusal": self.lease.refusal,
        }


def _send(stdin: Any, text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        stdin.write(text.encode("utf-8"))
    with contextlib.suppress(OSError, ValueError):
        stdin.close()
