"""The cline harness: one run's conversation, played by one sandboxed `cline --json` process."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import Any

from grading import sandbox
from grading.graders.rustregex import rust_search
from grading.sandbox import hostfiles
from grading.sandbox.bridge import bridged
from runs.untrusted_git import GitError

from .. import agent_clis
from ..apiproxy import ApiProxy, Lease
from ..claude_code.findings import skill_shadow_warnings
from ..claude_code.staging import stage_skill
from ..claude_code.stream import StreamTooLarge, drain, read_events
from ..conversation import Conversation
from ..harness import AgentResult, Dispatch
from . import wire
from .cli import (
    ENVIRONMENT,
    GLOBAL_SETTINGS,
    NAME,
    ClineError,
    cli_arguments,
    cli_path,
    cli_version,
    config_dir,
    write_config,
)
from .findings import skill_shadow
from .stream import partial_text, round_summary, transcribe

#: Where Cline 3.0 discovers a workspace's skills (also .clinerules/skills and .agents/skills).
SKILLS_DIR = ".cline/skills"
#: A round (one CLI process) that runs longer than this is killed and the run errored.
ROUND_SECONDS = 30 * 60
#: Why a follow-up cannot be delivered (README, "Other harnesses").
NO_RESUME = (
    "cline 3.0.65 cannot resume a session headless (--id forces its interactive mode, "
    "which --json refuses), so the follow-up of round {round} cannot be delivered"
)
_USAGE = ("calls", "input", "output", "cache_creation", "cache_read")


class ClineHarness:
    """Plays each run with the Cline CLI; one instance serves concurrent runs."""

    name = NAME

    @classmethod
    def problem(cls) -> str | None:
        """Why this harness cannot run here (registry.py), or None."""
        if cli_path() is None:
            return agent_clis.missing(NAME)
        if not wire.api_key():
            return (
                "--harness cline needs OPENAI_API_KEY: its CLI calls an OpenAI-compatible "
                "chat-completions API (OPENAI_BASE_URL, default https://api.openai.com/v1)"
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
            raise ClineError(agent_clis.missing(NAME))
        self.cli = found.resolve()
        self.version = cli_version(self.cli)
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
            config_dir(home).mkdir(parents=True)
            try:
                staged = stage_skill(dispatch, skills_dir=SKILLS_DIR)
            except (OSError, GitError, hostfiles.UntrustedPath) as exc:
                raise ClineError(f"could not stage the skill: {exc}") from None
            dispatch.result.artifacts["skill-shadow.json"] = skill_shadow(dispatch, staged=staged)
            proxy = ApiProxy(
                api_key=wire.api_key(),
                upstream=wire.base_url(),
                socket_path=socket_dir / "api.sock",
                wire=wire.CHAT,
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
        """The skill-shadow warning of the whole iteration (findings.py). No permission
        denials file: every tool call is approved."""
        return skill_shadow_warnings(folder)


class _Session(Conversation):
    """The shared conversation; its first round is one CLI process, and a follow-up, which
    the CLI cannot take headless, errors the run (NO_RESUME)."""

    def __init__(
        self,
        harness: ClineHarness,
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

    def _round(self, round_: int) -> list[str] | None:
        """Play one round; the assistant's texts, None when the run's budget ran out."""
        if round_ > 1:
            raise ClineError(NO_RESUME.format(round=round_))
        if self._out_of_budget():
            return None
        lines = self._play_round(round_)
        self.sync_usage()
        read = transcribe(lines, round_=round_, result=self.result, event=self._event)
        self.rounds.append(round_summary(round_, read))
        finish = (read.result or {}).get("finishReason")
        if read.result is None or finish != "completed":
            if self.lease.refusal:
                return None  # the proxy refused a call: the run's budget is spent
            said = read.error or str((read.result or {}).get("text") or "")
            said = " ".join(said.split())[:300] or f"finish reason {finish!r}"
            raise ClineError(f"round {round_}: {said}")
        return read.texts

    def _play_round(self, round_: int) -> list[dict[str, Any]]:
        """Run the CLI for one round, sandboxed, under the bridge to the proxy; its lines."""
        seconds = self.harness.round_seconds
        limits = sandbox.Limits(wall_seconds=seconds, cpu_seconds=2 * int(seconds) + 10)
        argv = cli_arguments(self.harness.cli, prompt=self._pending, env=self.dispatch.env)
        argv, base_url = bridged(argv, self.socket)
        # The base URL has no path: the CLI calls /chat/completions, the wire's one route.
        write_config(
            self.home, model=self.dispatch.agent.model, base_url=base_url, key=self.lease.key
        )
        installed = [(folder, folder) for folder in agent_clis.node_folders(self.harness.cli)]
        try:
            process = sandbox.spawn(
                argv,
                folder=self.dispatch.env,
                env=self._environment(),
                limits=limits,
                binds=[(self.home, self.home)],
                ro_binds=[(self.socket, self.socket), *installed],
                unsafe=not self.harness.sandboxed,
                stdin=subprocess.DEVNULL,  # piped stdin would become part of the prompt
            )
        except sandbox.SandboxError as exc:
            raise ClineError(f"round {round_}: {exc}") from None
        errors: deque[str] = deque(maxlen=20)
        reader = threading.Thread(target=drain, args=(process.stderr, errors), daemon=True)
        reader.start()
        try:
            # A streamed piece of text repeats all the text before it: only whole blocks
            # (content_end) are kept.
            lines = [line for line in read_events(process.stdout) if not partial_text(line)]
            process.wait()
        except StreamTooLarge as exc:
            raise ClineError(f"round {round_}: {exc}; stopped") from None
        finally:
            sandbox.kill_tree(process)
            reader.join(timeout=5)
        if process.limit:
            stopped = sandbox.describe(process.limit, limits)
            raise ClineError(
                f"round {round_}: the CLI was stopped: {stopped}",
                timed_out=process.limit == "wall_seconds",
            )
        if not any(line.get("type") in ("run_result", "error") for line in lines):
            detail = " ".join(" ".join(errors).split())[:300] or f"exit {process.returncode}"
            raise ClineError(f"round {round_}: the CLI ended without a result: {detail}")
        return lines

    def _environment(self) -> dict[str, str]:
        return sandbox.allowed_environment(
            {**ENVIRONMENT, "CLINE_DIR": str(config_dir(self.home))}, home=self.home
        )

    def sync_usage(self) -> None:
        """Bring the run's usage up to what the proxy counted (the CLI's every call)."""
        tally = self.lease.tally
        usage = self.result.usage
        for name in _USAGE:
            now = getattr(tally, name)
            setattr(usage, name, getattr(usage, name) + now - self._synced[name])
            self._synced[name] = now
        if hasattr(self.dispatch.client, "seconds"):
            self.dispatch.client.seconds += tally.upstream_seconds - self._api_seconds
        self._api_seconds = tally.upstream_seconds

    def artifacts(self, staged: Path | None) -> dict[str, Any]:
        tally = self.lease.tally
        record = {
            "harness": NAME,
            "cli_version": self.harness.version,
            "sandboxed": self.harness.sandboxed,
            "staged_skill": staged.relative_to(self.dispatch.env).as_posix() if staged else None,
            "isolation": {
                "config_dir": "fresh per run",
                "provider": "openai-compatible, through the proxy",
                "session_backend": ENVIRONMENT["CLINE_SESSION_BACKEND_MODE"],
                "global_settings": GLOBAL_SETTINGS,
            },
            "api": {
                "wire": wire.CHAT.name,
                "calls": tally.calls,
                "tokens": tally.tokens,
                "requests": tally.requests,
                "refused": tally.refused,
                "refusal": self.lease.refusal,
            },
            "rounds": self.rounds,
        }
        return {"cline.json": record}
