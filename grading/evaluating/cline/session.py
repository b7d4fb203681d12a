"""The cline harness: one run's conversation, played by one sandboxed `cline --json` process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grading import sandbox
from grading.sandbox.bridge import bridged

from .. import agent_clis
from ..claude_code.findings import skill_shadow_warnings
from ..cli_session import CliHarness, CliSession, round_limits
from ..harness import Dispatch
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
#: Why a follow-up cannot be delivered (README, "Other harnesses").
NO_RESUME = (
    "cline 3.0.65 cannot resume a session headless (--id forces its interactive mode, "
    "which --json refuses), so the follow-up of round {round} cannot be delivered"
)


class ClineHarness(CliHarness):
    """Plays each run with the Cline CLI; one instance serves concurrent runs."""

    name = NAME
    error = ClineError
    skills_dir = SKILLS_DIR
    wire = wire.CHAT

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

    @classmethod
    def find_cli(cls) -> Path | None:
        found = cli_path()
        return found.resolve() if found else None

    def cli_version(self, binary: Path) -> str:
        return cli_version(binary)

    def api(self) -> tuple[str, str | None]:
        return wire.api_key(), wire.base_url()

    def prepare(self, dispatch: Dispatch, home: Path, staged: Path | None) -> None:
        config_dir(home).mkdir(parents=True)
        dispatch.result.artifacts["skill-shadow.json"] = skill_shadow(dispatch, staged=staged)

    def finish_iteration(self, folder: Path) -> list[str]:
        """The skill-shadow warning of the whole iteration (findings.py). No permission
        denials file: every tool call is approved."""
        return skill_shadow_warnings(folder)


class _Session(CliSession):
    """The shared conversation; its first round is one CLI process, and a follow-up, which
    the CLI cannot take headless, errors the run (NO_RESUME)."""

    error = ClineError

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
        limits = round_limits(self.harness.round_seconds)
        argv = cli_arguments(self.harness.cli, prompt=self._pending, env=self.dispatch.env)
        argv, base_url = bridged(argv, self.socket)
        # The base URL has no path: the CLI calls /chat/completions, the wire's one route.
        write_config(
            self.home, model=self.dispatch.agent.model, base_url=base_url, key=self.lease.key
        )
        installed = [(folder, folder) for folder in agent_clis.node_folders(self.harness.cli)]
        # No stdin (piped stdin would become part of the prompt). A streamed piece of text
        # repeats all the text before it: only whole blocks (content_end) are kept.
        output = self.play_round(
            argv,
            round_=round_,
            env=self._environment(),
            limits=limits,
            ro_binds=installed,
            keep=lambda line: not partial_text(line),
        )
        lines = output.events
        if not any(line.get("type") in ("run_result", "error") for line in lines):
            detail = output.error_tail()
            raise ClineError(f"round {round_}: the CLI ended without a result: {detail}")
        return lines

    def _environment(self) -> dict[str, str]:
        return sandbox.allowed_environment(
            {**ENVIRONMENT, "CLINE_DIR": str(config_dir(self.home))}, home=self.home
        )

    def artifacts(self, staged: Path | None) -> dict[str, Any]:
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
            "api": {"wire": wire.CHAT.name, **self.api_record()},
            "rounds": self.rounds,
        }
        return {"cline.json": record}


ClineHarness.session = _Session  # defined after the harness, which names it
