"""What every CLI harness shares: a run's fresh home and API proxy (`CliHarness`), one
sandboxed CLI process per round, its stdout read as JSON lines within caps, and the run's
usage taken from the proxy's tally (`CliSession`).

Each harness (claude_code/, opencode/, codex/, cline/, gemini/) subclasses both and says only
what differs: where its CLI is and where it finds skills, which API it speaks, what its home
holds, its command line and environment, how its events become the conversation, and what a
round's end means. `CliHarness.run` makes the run's home (`<env>.home/`, beside the task
folder, outside its git tree) and a short socket folder, stages the skill, starts the proxy
with a lease of the run's budget, plays the conversation and removes both folders, whatever
happened. `play_round` runs the command — spawned in the
sandbox, stderr's tail kept for the error line, stdout read to its end or its cap, everything
it started killed — and raises the harness's own error (an APIError, so the runner records
the run as errored) when the sandbox could not start it, its output passed the cap, or a
limit stopped it.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading import sandbox
from grading.graders.rustregex import rust_search
from grading.sandbox import hostfiles
from runs.untrusted_git import GitError

from .apibudget import Lease
from .apiproxy import ApiProxy
from .apiwire import MESSAGES, Wire
from .conversation import Conversation
from .harness import AgentResult, Dispatch

#: A round (one CLI process) that runs longer than this is killed and the run errored.
ROUND_SECONDS = 30 * 60

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


class CliHarness(ABC):
    """A harness whose every round is one run of an agent CLI; one instance serves
    concurrent runs. Subclasses set the class attributes and override the hooks below."""

    name: str
    #: The harness's error: `error(message, timed_out=False)`, an anthropic.APIError.
    error: Callable[..., Exception]
    #: The conversation of one run.
    session: type[CliSession]
    #: Where the CLI discovers project skills, relative to the task folder.
    skills_dir: str = ".claude/skills"
    #: The API the CLI speaks, as the proxy forwards it.
    wire: Wire = MESSAGES

    def __init__(
        self,
        *,
        cli: Path | None = None,
        unsafe: bool | None = None,
        round_seconds: float = ROUND_SECONDS,
    ) -> None:
        found = cli or self.find_cli()
        if found is None:
            raise self.error(self.problem() or f"{self.name}: its CLI is not installed")
        self.cli = found
        self.version = self.cli_version(found)
        #: None: as runevals was told (--unsafe-no-sandbox sets sandbox.unsandboxed).
        self.unsafe = unsafe
        self.round_seconds = round_seconds

    # hooks
    @classmethod
    @abstractmethod
    def find_cli(cls) -> Path | None:
        """The installed CLI, None when it is not installed."""

    @classmethod
    def problem(cls) -> str | None:
        """Why this harness cannot run here (registry.py), or None."""
        return None

    @abstractmethod
    def cli_version(self, binary: Path) -> str:
        """The CLI's version, as conditions.json records it."""

    @abstractmethod
    def api(self) -> tuple[str, str | None]:
        """(the real key, the upstream base URL or None for the provider's own)."""

    def prepare(self, dispatch: Dispatch, home: Path, staged: Path | None) -> None:
        """Fill the run's fresh home (settings files) and record what the CLI could find
        before the agent can change it (`dispatch.result.artifacts`). By default the home
        stays empty and nothing is recorded (OpenCode's config comes in its environment)."""
        return None

    # the run
    @property
    def sandboxed(self) -> bool:
        return not (sandbox.is_unsandboxed() if self.unsafe is None else self.unsafe)

    def run(self, dispatch: Dispatch) -> AgentResult:
        from .claude_code.staging import stage_skill  # claude_code's package imports this one

        home = dispatch.env.with_name(dispatch.env.name + ".home")
        # Unix socket paths are limited to ~107 bytes, so the socket gets a short folder.
        socket_dir = Path(tempfile.mkdtemp(prefix="evalsite-api-"))
        try:
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir(parents=True)
            try:
                staged = stage_skill(dispatch, skills_dir=self.skills_dir)
            except (OSError, GitError, hostfiles.UntrustedPath) as exc:
                # GitError: a git baseline it could not read.
                raise self.error(f"could not stage the skill: {exc}") from None
            self.prepare(dispatch, home, staged)
            key, upstream = self.api()
            # Only the proxy ever holds the key: the CLI gets a placeholder for this run.
            proxy = ApiProxy(
                api_key=key, upstream=upstream, socket_path=socket_dir / "api.sock", wire=self.wire
            )
            with proxy:
                lease = proxy.lease(
                    max_calls=dispatch.agent.max_calls, token_budget=dispatch.agent.token_budget
                )
                session = self.session(self, dispatch, home=home, socket=socket_dir, lease=lease)
                try:
                    return session.run(dispatch.case)
                finally:
                    proxy.settled(lease)
                    session.sync_usage()
                    dispatch.result.artifacts.update(session.artifacts(staged))
        finally:
            shutil.rmtree(home, ignore_errors=True)
            shutil.rmtree(socket_dir, ignore_errors=True)


class CliSession(Conversation, ABC):
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
        # The stream caps are Claude Code's; its package imports this module.
        from .claude_code.stream import StreamTooLarge, drain, read_events

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

    @abstractmethod
    def artifacts(self, staged: Path | None) -> dict[str, Any]:
        """The run's record files (name → JSON data), written beside run.json."""

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
