"""The opencode harness: one run's conversation, each round one sandboxed CLI process."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import Any

from grading import sandbox
from grading.anthropic_client import api_key, base_url
from grading.graders.rustregex import rust_search
from grading.sandbox import hostfiles
from grading.sandbox.bridge import bridged
from runs.untrusted_git import GitError

from .. import agent_clis
from ..apiproxy import ApiProxy, Lease
from ..claude_code.staging import stage_skill
from ..claude_code.stream import StreamTooLarge, drain, read_events
from ..conversation import Conversation
from ..harness import AgentResult, Dispatch
from .cli import (
    ENVIRONMENT,
    NAME,
    PERMISSIONS,
    SKILLS_DIR,
    OpenCodeError,
    cli_arguments,
    cli_path,
    config_content,
    environment,
)
from .stream import RoundTranscript, transcribe

#: A round (one CLI process) that runs longer than this is killed and the run errored.
ROUND_SECONDS = 30 * 60
#: The CLI's data memory per process. Bun sizes its heap by this limit: under the sandbox's
#: default 2 GiB a one-call round took 18 s instead of 7 (measured), collecting all along.
MEMORY_BYTES = 4 * 1024**3
_USAGE = ("calls", "input", "output", "cache_creation", "cache_read")


class OpenCodeHarness:
    """Plays each run with the OpenCode CLI; one instance serves concurrent runs."""

    name = NAME

    @classmethod
    def problem(cls) -> str | None:
        """Why this harness cannot run here (registry.py), or None.

        Without ripgrep OpenCode's `skill` tool fails (it lists the skill's files with `rg`,
        which it would otherwise download): every with-skill run would load nothing.
        """
        if cli_path() is None:
            return agent_clis.missing(NAME)
        if shutil.which("rg", path=sandbox.sandbox_path()) is None:
            return (
                "--harness opencode needs ripgrep (rg) on the system PATH, for its skill, glob "
                "and grep tools: apt-get install ripgrep"
            )
        return None

    def __init__(
        self,
        *,
        cli: Path | None = None,
        unsafe: bool | None = None,
        round_seconds: float = ROUND_SECONDS,
    ) -> None:
        found = cli or cli_path()
        if found is None:
            raise OpenCodeError(agent_clis.missing(NAME))
        self.cli = found
        self.version = agent_clis.cli_version(found)
        #: None: as runevals was told (--unsafe-no-sandbox sets sandbox.unsandboxed).
        self.unsafe = unsafe
        self.round_seconds = round_seconds

    @property
    def sandboxed(self) -> bool:
        return not (sandbox.is_unsandboxed() if self.unsafe is None else self.unsafe)

    def run(self, dispatch: Dispatch) -> AgentResult:
        home = dispatch.env.with_name(dispatch.env.name + ".home")
        # Unix socket paths are limited to ~107 bytes, so the socket gets a short folder.
        socket_dir = Path(tempfile.mkdtemp(prefix="evalsite-api-"))
        try:
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir(parents=True)
            try:
                staged = stage_skill(dispatch, skills_dir=SKILLS_DIR)
            except (OSError, GitError, hostfiles.UntrustedPath) as exc:
                raise OpenCodeError(f"could not stage the skill: {exc}") from None
            proxy = ApiProxy(
                api_key=api_key(), upstream=base_url(), socket_path=socket_dir / "api.sock"
            )
            with proxy:
                lease = proxy.lease(
                    max_calls=dispatch.agent.max_calls, token_budget=dispatch.agent.token_budget
                )
                session = _Session(self, dispatch, home=home, socket=socket_dir, lease=lease)
                try:
                    return session.run(dispatch.case)
                finally:
                    session.sync_usage()
                    dispatch.result.artifacts.update(session.artifacts(staged))
        finally:
            shutil.rmtree(home, ignore_errors=True)
            shutil.rmtree(socket_dir, ignore_errors=True)

    def finish_iteration(self, folder: Path) -> list[str]:
        """Nothing to gather: each run's opencode.json says what it did."""
        return []


class _Session(Conversation):
    """The shared conversation, each round one `opencode run`: the first starts a session,
    every follow-up continues it with `--session <id>`."""

    def __init__(
        self,
        harness: OpenCodeHarness,
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
        self.session_id: str | None = None
        self.rounds: list[dict[str, Any]] = []
        self.loaded_from: list[str] = []
        self._pending = ""
        self._synced = dict.fromkeys(_USAGE, 0)
        self._api_seconds = 0.0

    def _say(self, text: str, round_: int, origin: dict[str, Any] | None = None) -> None:
        super()._say(text, round_, origin)
        self._pending = text

    def _round(self, round_: int) -> list[str] | None:
        """Play one round; the assistant's texts, None when the run's budget ran out."""
        if self._out_of_budget():
            return None
        events, returncode, errors = self._play_round(round_)
        self.sync_usage()
        read = transcribe(events, round_=round_, result=self.result, event=self._event)
        self.loaded_from += read.loaded_from
        self.rounds.append(_summary(round_, read, returncode))
        if read.session_id and self.session_id is None:
            self.session_id = read.session_id
        if self.lease.refusal:
            return None  # the proxy refused a call: the run's budget is spent
        if read.errors:
            raise OpenCodeError(f"round {round_}: {read.errors[-1]}")
        if returncode != 0 or read.session_id is None:
            detail = " ".join(" ".join(errors).split())[:300] or f"exit {returncode}"
            raise OpenCodeError(f"round {round_}: the CLI ended without an answer: {detail}")
        return read.texts

    def _play_round(self, round_: int) -> tuple[list[dict[str, Any]], int, deque[str]]:
        """Run the CLI for one round, sandboxed: its events, exit status and stderr's tail."""
        seconds = self.harness.round_seconds
        # CPU counts every thread of the CLI and what the agent runs: a busy round may use
        # more than its wall time, so CPU only stops what wall time would take too long to.
        limits = sandbox.Limits(
            wall_seconds=seconds, cpu_seconds=2 * int(seconds) + 10, memory_bytes=MEMORY_BYTES
        )
        argv = cli_arguments(
            self.harness.cli, model=self.dispatch.agent.model, session=self.session_id
        )
        argv, url = bridged(argv, self.socket)
        config = config_content(
            base_url=url, api_key=self.lease.key, model=self.dispatch.agent.model
        )
        installed = [(folder, folder) for folder in agent_clis.node_folders(self.harness.cli)]
        try:
            process = sandbox.spawn(
                argv,
                folder=self.dispatch.env,
                env=sandbox.allowed_environment(
                    environment(self.home, config=config), home=self.home
                ),
                limits=limits,
                binds=[(self.home, self.home)],
                ro_binds=[(self.socket, self.socket), *installed],
                unsafe=not self.harness.sandboxed,
                stdin=subprocess.PIPE,
            )
        except sandbox.SandboxError as exc:
            raise OpenCodeError(f"round {round_}: {exc}") from None
        errors: deque[str] = deque(maxlen=20)
        reader = threading.Thread(target=drain, args=(process.stderr, errors), daemon=True)
        reader.start()
        # The prompt is the message: OpenCode reads all of stdin before it starts.
        writer = threading.Thread(target=_send, args=(process.stdin, self._pending), daemon=True)
        writer.start()
        try:
            events = list(read_events(process.stdout))
            process.wait()
        except StreamTooLarge as exc:
            raise OpenCodeError(f"round {round_}: {exc}; stopped") from None
        finally:
            sandbox.kill_tree(process)
            reader.join(timeout=5)
            writer.join(timeout=5)
        if process.limit:
            stopped = sandbox.describe(process.limit, limits)
            raise OpenCodeError(
                f"round {round_}: the CLI was stopped: {stopped}",
                timed_out=process.limit == "wall_seconds",
            )
        return events, process.returncode, errors

    def sync_usage(self) -> None:
        """Bring the run's usage up to what the proxy counted (the CLI's every call)."""
        tally = self.lease.tally
        usage = self.result.usage
        for name in _USAGE:
            now = getattr(tally, name)
            setattr(usage, name, getattr(usage, name) + now - self._synced[name])
            self._synced[name] = now
        # The runner's client counts time spent waiting on the API; the CLI's calls bypass it.
        if hasattr(self.dispatch.client, "seconds"):
            self.dispatch.client.seconds += tally.upstream_seconds - self._api_seconds
        self._api_seconds = tally.upstream_seconds

    def artifacts(self, staged: Path | None) -> dict[str, Any]:
        """opencode.json: the dispatch's provenance, isolation and what each round did."""
        tally = self.lease.tally
        record = {
            "harness": NAME,
            "cli_version": self.harness.version,
            "session_id": self.session_id,
            "sandboxed": self.harness.sandboxed,
            "staged_skill": str(staged) if staged else None,
            "skills_loaded_from": self.loaded_from,
            "isolation": {
                "config_dir": "fresh per run",
                "environment": dict(ENVIRONMENT),
                "permission": dict(PERMISSIONS),
            },
            "api": {
                "calls": tally.calls,
                "tokens": tally.tokens,
                "requests": tally.requests,
                "refused": tally.refused,
                "refusal": self.lease.refusal,
            },
            "rounds": self.rounds,
        }
        return {"opencode.json": record}


def _send(stdin: Any, text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        stdin.write(text.encode("utf-8"))
    with contextlib.suppress(OSError, ValueError):
        stdin.close()


def _summary(round_: int, read: RoundTranscript, returncode: int) -> dict[str, Any]:
    """What opencode.json keeps of a round (a failed tool call's input keys, not its input)."""
    return {
        "round": round_,
        "exit_status": returncode,
        "steps": read.steps,
        "finish_reasons": read.finish_reasons,
        "errors": read.errors,
        "cli_reported_tokens": read.cli_reported_tokens,
        "tool_errors": read.tool_errors,
    }
