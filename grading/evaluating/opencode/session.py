"""The opencode harness: one run's conversation, each round one sandboxed CLI process."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from grading import sandbox
from grading.anthropic_client import api_key, base_url
from grading.sandbox.bridge import bridged

from .. import agent_clis
from ..cli_session import CliHarness, CliSession, RoundOutput, round_limits
from ..harness import Dispatch
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

#: The CLI's data memory per process. Bun sizes its heap by this limit: under the sandbox's
#: default 2 GiB a one-call round took 18 s instead of 7 (measured), collecting all along.
MEMORY_BYTES = 4 * 1024**3


class OpenCodeHarness(CliHarness):
    """Plays each run with the OpenCode CLI; one instance serves concurrent runs."""

    name = NAME
    error = OpenCodeError
    skills_dir = SKILLS_DIR

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

    @classmethod
    def find_cli(cls) -> Path | None:
        return cli_path()

    def cli_version(self, binary: Path) -> str:
        return agent_clis.cli_version(binary)

    def api(self) -> tuple[str, str | None]:
        # The same API, key and address as the runner's own client.
        return api_key(), base_url()

    def finish_iteration(self, folder: Path) -> list[str]:
        """Nothing to gather: each run's opencode.json says what it did."""
        return []


class _Session(CliSession):
    """The shared conversation, each round one `opencode run`: the first starts a session,
    every follow-up continues it with `--session <id>`."""

    error = OpenCodeError

    def __init__(self, harness: OpenCodeHarness, dispatch: Dispatch, **where: Any) -> None:
        super().__init__(harness, dispatch, **where)
        self.session_id: str | None = None
        self.loaded_from: list[str] = []

    def _round(self, round_: int) -> list[str] | None:
        """Play one round; the assistant's texts, None when the run's budget ran out."""
        if self._out_of_budget():
            return None
        output = self._play_round(round_)
        self.sync_usage()
        read = transcribe(output.events, round_=round_, result=self.result, event=self._event)
        self.loaded_from += read.loaded_from
        self.rounds.append(_summary(round_, read, output.returncode))
        if read.session_id and self.session_id is None:
            self.session_id = read.session_id
        if self.lease.refusal:
            return None  # the proxy refused a call: the run's budget is spent
        if read.errors:
            raise OpenCodeError(f"round {round_}: {read.errors[-1]}")
        if output.returncode != 0 or read.session_id is None:
            detail = output.error_tail()
            raise OpenCodeError(f"round {round_}: the CLI ended without an answer: {detail}")
        return read.texts

    def _play_round(self, round_: int) -> RoundOutput:
        """Run the CLI for one round, sandboxed, the prompt on its stdin."""
        limits = round_limits(self.harness.round_seconds, memory_bytes=MEMORY_BYTES)
        argv = cli_arguments(
            self.harness.cli, model=self.dispatch.agent.model, session=self.session_id
        )
        argv, url = bridged(argv, self.socket)
        config = config_content(
            base_url=url, api_key=self.lease.key, model=self.dispatch.agent.model
        )
        installed = [(folder, folder) for folder in agent_clis.node_folders(self.harness.cli)]
        # The prompt is the message: OpenCode reads all of stdin before it starts.
        return self.play_round(
            argv,
            round_=round_,
            env=sandbox.allowed_environment(environment(self.home, config=config), home=self.home),
            limits=limits,
            ro_binds=installed,
            stdin_text=self._pending,
        )

    def artifacts(self, staged: Path | None) -> dict[str, Any]:
        """opencode.json: the dispatch's provenance, isolation and what each round did."""
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
            "api": self.api_record(),
            "rounds": self.rounds,
        }
        return {"opencode.json": record}


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


OpenCodeHarness.session = _Session  # defined after the harness, which names it
