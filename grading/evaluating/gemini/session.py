"""The gemini harness: one run's conversation, each round one sandboxed Gemini CLI process."""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings

from grading import sandbox
from grading.sandbox import hostfiles
from grading.sandbox.bridge import bridged
from runs.untrusted_git import GitError

from .. import agent_clis
from ..apiproxy import ApiProxy
from ..claude_code.findings import skill_shadow_warnings, subject_name
from ..claude_code.staging import stage_skill
from ..cli_session import CliSession, round_limits
from ..harness import AgentResult, Dispatch
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

#: A round (one CLI process) that runs longer than this is killed and the run errored.
ROUND_SECONDS = 30 * 60
DEFAULT_UPSTREAM = "https://generativelanguage.googleapis.com"
#: A session id as the CLI prints it (a UUID); anything else is not passed to --resume.
_SESSION_ID = re.compile(r"[0-9A-Za-z-]{8,64}")
_MEND = Path(__file__).with_name("session_mend.py")


def api_key() -> str:
    return str(settings.GEMINI_API_KEY)


def base_url() -> str:
    return str(settings.GOOGLE_GEMINI_BASE_URL) or DEFAULT_UPSTREAM


class GeminiHarness:
    """Plays each run with Gemini CLI; one instance serves concurrent runs."""

    name = NAME

    @classmethod
    def problem(cls) -> str | None:
        """Why this harness cannot run here (registry.py), or None."""
        if cli_path() is None:
            return agent_clis.missing(NAME)
        if not api_key():
            return "--harness gemini needs GEMINI_API_KEY (the Gemini API key) to be set"
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
            raise GeminiError(agent_clis.missing(NAME))
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
            home.mkdir(parents=True)
            write_home(home)
            try:
                staged = stage_skill(dispatch, skills_dir=SKILLS_DIR)
            except (OSError, GitError, hostfiles.UntrustedPath) as exc:
                raise GeminiError(f"could not stage the skill: {exc}") from None
            name = dispatch.skill.name if dispatch.skill else subject_name(dispatch)
            shadow = skill_shadow(dispatch.env, name=name, staged=staged)
            proxy = ApiProxy(
                api_key=api_key(),
                upstream=base_url(),
                socket_path=socket_dir / "api.sock",
                wire=GEMINI,
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
                    dispatch.result.artifacts["skill-shadow.json"] = shadow
        finally:
            shutil.rmtree(home, ignore_errors=True)
            shutil.rmtree(socket_dir, ignore_errors=True)

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
