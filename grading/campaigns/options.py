"""How a campaign's runs are played, wherever they run, and the checks before any work."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from grading.anthropic_client import api_key
from grading.evaluating import registry
from grading.evaluating.harness import Harness
from grading.evaluating.runner import Settings
from grading.sandbox import sandbox_problem

COULD_NOT_RUN = 2
REGRESSION = 1


class CampaignError(Exception):
    """The campaign cannot run (or did not pass); one line, and runevals' exit status."""

    def __init__(self, message: str, returncode: int = COULD_NOT_RUN):
        super().__init__(message)
        self.returncode = returncode


@dataclass(frozen=True)
class CampaignOptions:
    """runevals' options that decide how each run is played (recorded with a queued campaign)."""

    harness: str = "messages"
    concurrency: int = 4
    keep_env: bool = False
    responder_model: str | None = None
    #: False only for --unsafe-no-sandbox.
    sandbox: bool = True
    #: False for --no-alerts: no regression, failure or budget alert (grading/alerts/).
    alerts: bool = True

    def to_data(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> CampaignOptions:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def runner_settings(self, workspace: Path) -> Settings:
        return Settings(
            workspace=workspace,
            concurrency=self.concurrency,
            keep_env=self.keep_env,
            responder_model=self.responder_model,
            sandbox=self.sandbox,
            harness=self.make_harness(),
        )

    def make_harness(self) -> Harness:
        if (problem := registry.problem(self.harness)) is not None:
            raise CampaignError(problem)
        return registry.make(self.harness)

    def problem_playing_here(self) -> str | None:
        """Why runs cannot be played on this machine (no key, no sandbox, no CLI), or None."""
        if not api_key():
            return "ANTHROPIC_API_KEY is not set: runevals needs it to call the Anthropic API"
        # Never a silent downgrade: without the sandbox an agent's Bash reads this process's
        # environment (the API key, SECRET_KEY) and the site's database.
        if self.sandbox and (problem := sandbox_problem()) is not None:
            return (
                f"cannot sandbox agents' commands here: {problem}; "
                "pass --unsafe-no-sandbox to run them without the sandbox"
            )
        return registry.problem(self.harness)
