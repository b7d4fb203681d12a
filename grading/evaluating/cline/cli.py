"""The Cline CLI from the npm registry: where it is, its version, its configuration and its
command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic

from grading.sandbox import hostfiles

from .. import agent_clis

NAME = "cline"
PROVIDER = "openai-compatible"
#: Set for every process: the session runs in the CLI's own process, never in a background
#: "hub" daemon (which it starts by default and which outlives the command); no telemetry.
ENVIRONMENT = {
    "CLINE_SESSION_BACKEND_MODE": "local",
    "DO_NOT_TRACK": "1",
    "NO_COLOR": "1",
}
#: The CLI's global settings (data/settings/global-settings.json): no telemetry, no update
#: checks, act mode with tools approved (without a TTY an unapproved call is refused).
GLOBAL_SETTINGS = {
    "telemetryOptOut": True,
    "autoUpdateEnabled": False,
    "planActMode": "act",
    "toolAutoApprove": True,
}
#: Written as each file's updatedAt (the CLI refuses a providers.json without one).
_WRITTEN_AT = "2026-01-01T00:00:00.000Z"


class ClineError(anthropic.APIError):
    """The CLI could not play a round (crashed, stopped by a limit, an API error after its
    retries, a follow-up it cannot take). An APIError, so that the runner records the run
    as errored, never failed."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message, None, body=None)  # type: ignore[arg-type]
        self.timed_out = timed_out


def cli_path() -> Path | None:
    return agent_clis.cli_path(NAME)


def cli_version(binary: Path) -> str:
    """`3.0.65`, what `cline --version` prints."""
    return agent_clis.cli_version(binary)


def config_dir(home: Path) -> Path:
    """CLINE_DIR: the CLI's configuration (skills, rules, hooks) and, in `data/`, its state."""
    return home / ".cline"


def write_config(home: Path, *, model: str, base_url: str, key: str) -> None:
    """The provider (the proxy's bridge, a placeholder key) and the global settings, in a
    fresh CLINE_DIR: what `cline auth -p openai-compatible -k KEY -b URL -m MODEL` writes,
    without running the CLI for it."""
    # Written under a folder descriptor, following no link: the home is writable inside the
    # sandbox.
    settings = (config_dir(home) / "data" / "settings").relative_to(home)
    providers: dict[str, Any] = {
        "version": 1,
        "lastUsedProvider": PROVIDER,
        "modes": {},
        "providers": {
            PROVIDER: {
                "settings": {
                    "provider": PROVIDER,
                    "apiKey": key,
                    "model": model,
                    "baseUrl": base_url,
                },
                "updatedAt": _WRITTEN_AT,
                "tokenSource": "manual",
            }
        },
    }
    hostfiles.write(home, settings / "providers.json", json.dumps(providers, indent=2).encode())
    hostfiles.write(
        home, settings / "global-settings.json", json.dumps(GLOBAL_SETTINGS, indent=2).encode()
    )


def cli_arguments(binary: Path, *, prompt: str, env: Path) -> list[str]:
    """One task's command line: JSON lines out, act mode, tools approved, in the task folder.

    No `-P`/`-m`: given on the command line they rewrite providers.json without its base URL
    and key. The prompt follows `--`, so it is never read as an option; the CLI takes an
    argument without whitespace for a mistyped command, so a one-word prompt gets a newline
    (which it trims from the message it sends).
    """
    if not any(character.isspace() for character in prompt):
        prompt += "\n"
    return [
        str(binary),
        "--json",
        "--act",
        "--auto-approve",
        "true",
        "--cwd",
        str(env),
        "--",
        prompt,
    ]
