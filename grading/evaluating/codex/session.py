"""The codex harness: one run's conversation, each round one sandboxed `codex exec`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from grading import sandbox
from grading.sandbox import hostfiles
from grading.sandbox.bridge import bridged

from .. import agent_clis
from ..claude_code.findings import skill_shadow_warnings, subject_name
from ..cli_session import CliHarness, CliSession, round_limits
from ..harness import Dispatch
from .cli import (
    APPROVAL_POLICY,
    DISABLED_FEATURES,
    KEY_VARIABLE,
    NAME,
    SANDBOX_MODE,
    CodexError,
    cli_arguments,
    config_toml,
)
from .events import transcribe
from .shadow import skill_shadow
from .wire import RESPONSES, api_key, upstream

#: Where Codex 0.171 discovers a repository's skills: `.agents/skills/<name>/SKILL.md` from
#: the working folder up to the repository's root (its skills loader's `.agents/skills`
#: root, beside `$CODEX_HOME/skills` and `~/.agents/skills`, both fresh and empty here, and
#: its bundled system skills, turned off in config.toml).
SKILLS_DIR = ".agents/skills"
#: A session id as Codex prints it (a UUID): the agent shares the CLI's stdout, so anything
#: else is not given back to `exec resume`.
_SESSION_ID = re.compile(r"[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}")


class CodexHarness(CliHarness):
    """Plays each run with the Codex CLI; one instance serves concurrent runs."""

    name = NAME
    error = CodexError
    skills_dir = SKILLS_DIR
    wire = RESPONSES
    #: Codex has no skill tool: no `__skill_invoked` is graded (events.py says what is kept).
    observes_skill_calls = False

    @classmethod
    def problem(cls) -> str | None:
        """Why this harness cannot run here (registry.py), or None."""
        if agent_clis.cli_path(NAME) is None:
            return agent_clis.missing(NAME)
        if not api_key():
            return "OPENAI_API_KEY is not set: --harness codex needs it to call the OpenAI API"
        return None

    @classmethod
    def find_cli(cls) -> Path | None:
        return agent_clis.cli_path(NAME)

    def cli_version(self, binary: Path) -> str:
        return agent_clis.cli_version(binary).removeprefix("codex-cli ").strip()

    def api(self) -> tuple[str, str | None]:
        return api_key(), upstream()

    def prepare(self, dispatch: Dispatch, home: Path, staged: Path | None) -> None:
        (home / ".codex").mkdir()
        # What Codex will list, before the agent can change it.
        name = dispatch.skill.name if dispatch.skill else subject_name(dispatch)
        shadow = skill_shadow(dispatch.env, SKILLS_DIR, name=name, staged=staged)
        dispatch.result.artifacts["skill-shadow.json"] = shadow

    def finish_iteration(self, folder: Path) -> list[str]:
        """The skill-shadow warning of the whole iteration (shadow.py)."""
        return skill_shadow_warnings(folder)


class _Session(CliSession):
    """The shared conversation, each round played by one `codex exec` (resumed after the first)."""

    error = CodexError

    def __init__(self, harness: CodexHarness, dispatch: Dispatch, **where: Any) -> None:
        super().__init__(harness, dispatch, **where)
        self.thread_id: str | None = None
        self._staged = {
            skill.name: f"{SKILLS_DIR}/{skill.name}/SKILL.md"
            for skill in ([dispatch.skill] if dispatch.skill else []) + list(dispatch.siblings)
        }

    def _round(self, round_: int) -> list[str] | None:
        """Play one round; the assistant's texts, None when the run's budget ran out."""
        if self._out_of_budget():
            return None
        events, exit_code = self._play_round(round_)
        self.sync_usage()
        read = transcribe(
            events,
            round_=round_,
            result=self.result,
            event=self._event,
            staged=self._staged,
            env=str(self.dispatch.env.resolve()),
        )
        if self.thread_id is None and read.thread_id and _SESSION_ID.fullmatch(read.thread_id):
            self.thread_id = read.thread_id
        self.rounds.append(
            {
                "round": round_,
                "thread_id": read.thread_id,
                "resumed": round_ > 1,
                "exit_code": exit_code,
                "completed": read.completed,
                "failure": read.failure,
                "errors": read.errors[:10],
                "cli_reported_usage": read.usage,
                "notices": read.notices[:10],
                "skill_file_reads": read.skill_file_reads[:20],
            }
        )
        if self.lease.refusal:
            return None  # the proxy refused a call: the run's budget is spent
        if read.failure or not read.completed:
            said = read.failure or (read.errors[-1] if read.errors else None)
            said = said or f"the CLI ended without completing its turn (exit {exit_code})"
            raise CodexError(f"round {round_}: {said}")
        if self.thread_id is None:
            raise CodexError(f"round {round_}: the CLI named no session to resume")
        return read.texts

    def _play_round(self, round_: int) -> tuple[list[dict[str, Any]], int | None]:
        """Run the CLI for one round, sandboxed; its JSONL events and exit status."""
        limits = round_limits(self.harness.round_seconds)
        model = self.dispatch.agent.model
        argv = cli_arguments(
            self.harness.cli,
            model=model,
            env=self.dispatch.env,
            prompt=self._pending,
            thread_id=self.thread_id if round_ > 1 else None,
        )
        argv, base_url = bridged(argv, self.socket)
        # Written each round: the bridge's port is chosen per process.
        # The home is writable inside the sandbox, so after round 1 the agent may have put a
        # link there: written under a folder descriptor, following no link.
        hostfiles.write(
            self.home, ".codex/config.toml", config_toml(model=model, base_url=base_url).encode()
        )
        installed = [(folder, folder) for folder in agent_clis.node_folders(self.harness.cli)]
        output = self.play_round(
            argv, round_=round_, env=self._environment(), limits=limits, ro_binds=installed
        )
        events = output.events
        if not events:
            detail = output.error_tail()
            raise CodexError(f"round {round_}: the CLI printed no events: {detail}")
        return events, output.returncode

    def _environment(self) -> dict[str, str]:
        return sandbox.allowed_environment(
            {
                "CODEX_HOME": str(self.home / ".codex"),
                KEY_VARIABLE: self.lease.key,
                "NO_COLOR": "1",
            },
            home=self.home,
        )

    def artifacts(self, staged: Path | None) -> dict[str, Any]:
        """codex.json: the dispatch's provenance, isolation and API use."""
        return {"codex.json": self.record(staged)}

    def record(self, staged: Path | None) -> dict[str, Any]:
        return {
            "harness": NAME,
            "cli_version": self.harness.version,
            "session_id": self.thread_id,
            "sandboxed": self.harness.sandboxed,
            "skill_staged_at": (
                staged.relative_to(self.dispatch.env).as_posix() if staged else None
            ),
            "skill_invocation": "not observable (no skill tool); reads of the staged SKILL.md "
            "by a command are listed per round as skill_file_reads",
            "isolation": {
                "codex_home": "fresh per run",
                "approval_policy": APPROVAL_POLICY,
                "sandbox_mode": SANDBOX_MODE + " (inside evalsite's sandbox)",
                "disabled_features": list(DISABLED_FEATURES),
                "web_search": "disabled",
                "bundled_skills": "disabled",
                "mcp_servers": [],
            },
            "api": {"wire": RESPONSES.name, **self.api_record()},
            "rounds": self.rounds,
        }


CodexHarness.session = _Session  # defined after the harness, which names it
