"""The claude-code harness: one run's conversation, each round one sandboxed CLI process."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from grading import sandbox
from grading.anthropic_client import api_key, base_url

from ..cli_session import CliHarness, CliSession, round_limits
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
from .stream import round_summary, transcribe


class ClaudeCodeHarness(CliHarness):
    """Plays each run with the Claude Code CLI; one instance serves concurrent runs."""

    name = NAME
    error = ClaudeCodeError

    @classmethod
    def problem(cls) -> str | None:
        """Why this harness cannot run here (registry.py), or None."""
        if cli_path() is None:
            return "--harness claude-code needs the extra: pip install -e '.[claude-code]'"
        return None

    @classmethod
    def find_cli(cls) -> Path | None:
        return cli_path()

    def cli_version(self, binary: Path) -> str:
        return cli_version(binary)

    def api(self) -> tuple[str, str | None]:
        # The same API, key and address as the runner's own client.
        return api_key(), base_url()

    def prepare(self, dispatch: Dispatch, home: Path, staged: Path | None) -> None:
        (home / ".claude").mkdir()

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


ClaudeCodeHarness.session = _Session  # defined after the harness, which names it
