"""The claude-code harness: one run's conversation, each round one sandboxed CLI process."""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from grading import sandbox
from grading.anthropic_client import api_key, base_url
from grading.sandbox import hostfiles
from runs.untrusted_git import GitError

from ..apiproxy import ApiProxy
from ..cli_session import CliSession, round_limits
from ..harness import AgentResult, Dispatch
from .cli import (
    ALLOWED_TOOLS,
    ENVIRONMENT,
    NAME,
    PERMISSION_MODE,
    SETTING_SOURCES,
    ClaudeCodeError,
    cli_arguments,
    cli_path,
    cli_version,
)
from .findings import permission_denials_report, skill_shadow, skill_shadow_warnings, surface
from .staging import stage_skill
from .stream import round_summary, transcribe

#: A round (one CLI process) that runs longer than this is killed and the run errored.
ROUND_SECONDS = 30 * 60


class ClaudeCodeHarness:
    """Plays each run with the Claude Code CLI; one instance serves concurrent runs."""

    name = NAME

    @classmethod
    def problem(cls) -> str | None:
        """Why this harness cannot run here (registry.py), or None."""
        if cli_path() is None:
            return "--harness claude-code needs the extra: pip install -e '.[claude-code]'"
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
            raise ClaudeCodeError("claude-code needs the extra: pip install -e '.[claude-code]'")
        self.cli = found
        self.version = cli_version(found)
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
            (home / ".claude").mkdir(parents=True)
            try:
                staged = stage_skill(dispatch)
            except (
                OSError,
                GitError,
                hostfiles.UntrustedPath,
            ) as exc:  # GitError: a git baseline it could not read
                raise ClaudeCodeError(f"could not stage the skill: {exc}") from None
            # The same API, key and address as the runner's own client; only the proxy ever
            # holds the key.
            proxy = ApiProxy(
                api_key=api_key(),
                upstream=base_url(),
                socket_path=socket_dir / "api.sock",
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
                    artifacts(dispatch.result).update(session.artifacts(staged))
        finally:
            shutil.rmtree(home, ignore_errors=True)
            shutil.rmtree(socket_dir, ignore_errors=True)

    def finish_iteration(self, folder: Path) -> list[str]:
        """Gather what the runs found: permission-denials.json (eval-magic's file, which the
        importer reads) and the skill-shadow warnings of the whole iteration."""
        number = int(folder.name.removeprefix("iteration-"))
        if (denials := permission_denials_report(folder, number=number)) is not None:
            (folder / "permission-denials.json").write_text(
                json.dumps(denials, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
        return skill_shadow_warnings(folder)


def artifacts(result: AgentResult) -> dict[str, Any]:
    """The run's extra files (name → JSON data), for the runner to write beside run.json."""
    return result.artifacts


class _Session(CliSession):
    """The shared conversation, with each round played by one CLI process.

    `Conversation._play` decides what follows a round (scripted turns, the responder,
    stopping); here `_round` plays the prompt `_say` kept.
    """

    error = ClaudeCodeError

    def __init__(self, harness: ClaudeCodeHarness, dispatch: Dispatch, **where: Any) -> None:
        super().__init__(harness, dispatch, **where)
        self.session_id = str(uuid.uuid4())
        self.surfaces: list[dict[str, Any]] = []
        self.loaded_from: list[str] = []

    def _round(self, round_: int) -> list[str] | None:
        """Play one round; the assistant's texts, None when the run's budget ran out."""
        if self._out_of_budget():
            return None
        events = self._play_round(round_)
        self.sync_usage()
        read = transcribe(events, round_=round_, result=self.result, event=self._event)
        if read.init is not None:
            self.surfaces.append(surface(round_, read.init))
        self.loaded_from += read.loaded_from
        if read.result is None:  # (never: _play_round refuses a round without one)
            raise ClaudeCodeError(f"round {round_}: the CLI ended without a result")
        self.rounds.append(round_summary(round_, read.result, subagent_calls=read.subagent_calls))
        if read.result.get("is_error"):
            if self.lease.refusal:
                return None  # the proxy refused a call: the run's budget is spent
            status = read.result.get("api_error_status")
            said = " ".join(str(read.result.get("result") or read.result.get("subtype")).split())
            raise ClaudeCodeError(
                f"round {round_}: {said[:300]}" + (f" (API status {status})" if status else "")
            )
        return read.texts

    def _play_round(self, round_: int) -> list[dict[str, Any]]:
        """Run the CLI for one round, sandboxed; its stream-json events."""
        limits = round_limits(self.harness.round_seconds)
        session = ["--session-id" if round_ == 1 else "--resume", self.session_id]
        argv = cli_arguments(
            self.harness.cli,
            model=self.dispatch.agent.model,
            session=session,
            prompt=self._pending,
            env=self.dispatch.env,
        )
        bundled = self.harness.cli.parent
        output = self.play_round(
            argv,
            round_=round_,
            env=self._environment(),
            limits=limits,
            ro_binds=[(bundled, bundled)],
        )
        events = output.events
        if not any(e.get("type") == "result" for e in events):
            detail = output.error_tail()
            raise ClaudeCodeError(f"round {round_}: the CLI ended without a result: {detail}")
        return events

    def _environment(self) -> dict[str, str]:
        return sandbox.allowed_environment(
            {
                **ENVIRONMENT,
                "CLAUDE_CONFIG_DIR": str(self.home / ".claude"),
                "ANTHROPIC_UNIX_SOCKET": str(self.socket / "api.sock"),
                # The socket carries the requests; the URL only names the Host header.
                "ANTHROPIC_BASE_URL": "http://localhost",
                "ANTHROPIC_API_KEY": self.lease.key,
            },
            home=self.home,
        )

    def artifacts(self, staged: Path | None) -> dict[str, Any]:
        record = {
            "harness": NAME,
            "cli_version": self.harness.version,
            "session_id": self.session_id,
            "sandboxed": self.harness.sandboxed,
            "isolation": {
                "config_dir": "fresh per run",
                "setting_sources": SETTING_SOURCES,
                "strict_mcp_config": True,
                "permission_mode": PERMISSION_MODE,
                "allowed_tools": list(ALLOWED_TOOLS),
            },
            "api": self.api_record(),
            "rounds": self.rounds,
        }
        shadow = skill_shadow(
            self.dispatch, staged=staged, surfaces=self.surfaces, loaded_from=self.loaded_from
        )
        return {"claude-code.json": record, "skill-shadow.json": shadow}
