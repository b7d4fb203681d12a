"""The gemini harness: one run's conversation, each round one sandboxed Gemini CLI process."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

from django.conf import settings

from grading import sandbox
from grading.sandbox.bridge import bridged

from .. import agent_clis
from ..claude_code.findings import skill_shadow_warnings, subject_name
from ..cli_session import CliHarness, CliSession, round_limits
from ..harness import Dispatch
from .cli import (
    ALLOWED_TOOLS,
    APPROVAL_MODE,
    NAME,
    SKILLS_DIR,
    GeminiError,
    cli_arguments,
    cli_path,
    cli_version,
    environment,
    write_home,
)
from .shadow import skill_shadow
from .stream import round_summary, transcribe
from .wire import GEMINI

DEFAULT_UPSTREAM = "https://generativelanguage.googleapis.com"
#: A session id as the CLI prints it (a UUID); anything else is not passed to --resume.
_SESSION_ID = re.compile(r"[0-9A-Za-z-]{8,64}")
_MEND = Path(__file__).with_name("session_mend.py")


def api_key() -> str:
    return str(settings.GEMINI_API_KEY)


def base_url() -> str:
    return str(settings.GOOGLE_GEMINI_BASE_URL) or DEFAULT_UPSTREAM


class GeminiHarness(CliHarness):
    """Plays each run with Gemini CLI; one instance serves concurrent runs."""

    name = NAME
    error = GeminiError
    skills_dir = SKILLS_DIR
    wire = GEMINI

    @classmethod
    def find_cli(cls) -> Path | None:
        return cli_path()

    @classmethod
    def problem(cls) -> str | None:
        """Why this harness cannot run here (registry.py), or None."""
        if cli_path() is None:
            return agent_clis.missing(NAME)
        if not api_key():
            return "--harness gemini needs GEMINI_API_KEY (the Gemini API key) to be set"
        return None

    def cli_version(self, binary: Path) -> str:
        return cli_version(binary)

    def api(self) -> tuple[str, str | None]:
        return api_key(), base_url()

    def prepare(self, dispatch: Dispatch, home: Path, staged: Path | None) -> None:
        write_home(home)
        name = dispatch.skill.name if dispatch.skill else subject_name(dispatch)
        shadow = skill_shadow(dispatch.env, name=name, staged=staged)
        dispatch.result.artifacts["skill-shadow.json"] = shadow

    def finish_iteration(self, folder: Path) -> list[str]:
        """The skill-shadow warning of the iteration, from its runs' skill-shadow.json."""
        return skill_shadow_warnings(folder)


class _Session(CliSession):
    """The shared conversation, with each round played by one CLI process: the first starts
    a session, each follow-up resumes it (`--resume <session id>`)."""

    error = GeminiError

    def __init__(self, harness: GeminiHarness, dispatch: Dispatch, **where: Any) -> None:
        super().__init__(harness, dispatch, **where)
        self.session_id: str | None = None

    def _round(self, round_: int) -> list[str] | None:
        """Play one round; the assistant's texts, None when the run's budget ran out."""
        if self._out_of_budget():
            return None
        events = self._play_round(round_)
        self.sync_usage()
        read = transcribe(events, round_=round_, result=self.result, event=self._event)
        if self.session_id is None and read.session_id and _SESSION_ID.fullmatch(read.session_id):
            self.session_id = read.session_id
        self.rounds.append(round_summary(round_, read))
        done = read.result or {}
        if done.get("status") != "success":
            if self.lease.refusal:
                return None  # the proxy refused a call: the run's budget is spent
            error = done.get("error") if isinstance(done.get("error"), dict) else {}
            said = " ".join(str(error.get("message") or done.get("status")).split())
            raise GeminiError(f"round {round_}: {said[:300]}")
        return read.texts

    def _play_round(self, round_: int) -> list[dict[str, Any]]:
        """Run the CLI for one round, sandboxed; its stream-json events."""
        if round_ > 1:
            if self.session_id is None:
                raise GeminiError(f"round {round_}: the CLI named no session to resume")
            self._mend_session(round_)
        limits = round_limits(self.harness.round_seconds)
        argv = cli_arguments(
            self.harness.cli,
            model=self.dispatch.agent.model,
            resume=self.session_id if round_ > 1 else None,
            prompt=self._pending,
        )
        # The CLI takes only a base URL: a loopback bridge inside the sandbox carries its
        # calls to the proxy's socket.
        argv, base = bridged(argv, self.socket)
        env = sandbox.allowed_environment(
            environment(self.home, base_url=base, key=self.lease.key), home=self.home
        )
        node = [(folder, folder) for folder in agent_clis.node_folders(self.harness.cli)]
        output = self.play_round(argv, round_=round_, env=env, limits=limits, ro_binds=node)
        events = output.events
        if not any(e.get("type") == "result" for e in events):
            detail = output.error_tail()
            raise GeminiError(f"round {round_}: the CLI ended without a result: {detail}")
        return events

    def _mend_session(self, round_: int) -> None:
        """Leave the repeated function responses out of the recorded session before it is
        resumed (session_mend.py says why), in the sandbox: the session is the agent's."""
        script = self.socket / _MEND.name
        shutil.copyfile(_MEND, script)
        limits = sandbox.Limits(wall_seconds=60, cpu_seconds=60)
        outcome = sandbox.run(
            [sys.executable, "-I", str(script), str(self.home / ".gemini" / "tmp")],
            folder=self.dispatch.env,
            env=sandbox.allowed_environment(home=self.home),
            limits=limits,
            binds=[(self.home, self.home)],
            ro_binds=[(self.socket, self.socket)],
            unsafe=not self.harness.sandboxed,
        )
        if outcome.returncode != 0:
            said = " ".join(outcome.stderr.split())[-300:] or f"exit {outcome.returncode}"
            if outcome.limit:
                said = sandbox.describe(outcome.limit, limits)
            raise GeminiError(f"round {round_}: could not prepare the session: {said}")

    def artifacts(self, staged: Path | None) -> dict[str, Any]:
        record = {
            "harness": NAME,
            "cli_version": self.harness.version,
            "session_id": self.session_id,
            "sandboxed": self.harness.sandboxed,
            "staged_skill": str(staged) if staged else None,
            "isolation": {
                "home": "fresh per run",
                "approval_mode": APPROVAL_MODE,
                "allowed_tools": list(ALLOWED_TOOLS),
                "mcp_servers": [],
            },
            "api": {
                "wire": GEMINI.name,
                "token_counts": self.lease.tally.token_counts,
                **self.api_record(),
            },
            "rounds": self.rounds,
        }
        return {"gemini.json": record}


GeminiHarness.session = _Session  # defined after the harness, which names it
