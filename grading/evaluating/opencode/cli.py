"""The OpenCode CLI (npm `opencode-ai`): where it is, how one round is invoked, its config.

OpenCode is configured by the JSON in OPENCODE_CONFIG_CONTENT (merged last, over any project
`opencode.json` a fixture carries) and by environment flags, the names of which are read from
its 1.18 bundle: no models.dev fetch, no autoupdate, no external plugins, no `.claude/` or
`.agents/` skill scans and no CLAUDE.md, no sharing.
"""

from __future__ import annotations

import json
from pathlib import Path

import anthropic

from .. import agent_clis

NAME = "opencode"
#: The session's title: given, so the CLI does not spend an API call to make one up.
TITLE = "evalsite run"
#: Where OpenCode 1.18 discovers a project's skills: `{skill,skills}/**/SKILL.md` under each
#: config folder, the project's `.opencode/` among them.
SKILLS_DIR = ".opencode/skills"
ENVIRONMENT = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    # Both skill scans outside the config folders (~/.claude, ~/.agents and the project's
    # .claude/ and .agents/), and CLAUDE.md as instructions.
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_PURE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
}
#: Headless, a tool that would ask is refused: what the task needs is allowed, the rest denied.
#: Edits outside the task folder are `external_directory`, denied; bash runs in the sandbox.
PERMISSIONS = {
    "read": "allow",
    "edit": "allow",
    "glob": "allow",
    "grep": "allow",
    "list": "allow",
    "bash": "allow",
    "task": "allow",
    "skill": "allow",
    "todowrite": "allow",
    "external_directory": "deny",
    "webfetch": "deny",
    "websearch": "deny",
    "question": "deny",
    "doom_loop": "deny",
}


class OpenCodeError(anthropic.APIError):
    """The CLI could not play a round (crashed, stopped by a limit, an API error after its
    retries). An APIError, so that the runner records the run as errored, never failed."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message, None, body=None)  # type: ignore[arg-type]
        #: The round ran past its wall time (a trigger run records a timeout, not an error).
        self.timed_out = timed_out


def cli_path() -> Path | None:
    return agent_clis.cli_path(NAME)


def config_content(*, base_url: str, api_key: str, model: str) -> str:
    """OPENCODE_CONFIG_CONTENT: the Anthropic provider at the bridge, with the run's key.

    The model is declared, as models.dev (OpenCode's catalogue) is not fetched; formatters,
    LSP servers and the undo snapshots (a git copy of the task folder) are off: none is the
    agent's work, and formatters would rewrite what it wrote.
    """
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "anthropic": {
                "options": {"baseURL": f"{base_url}/v1", "apiKey": api_key},
                "models": {model: {"name": model}},
            }
        },
        "enabled_providers": ["anthropic"],
        "model": f"anthropic/{model}",
        "small_model": f"anthropic/{model}",
        "permission": PERMISSIONS,
        "share": "disabled",
        "autoupdate": False,
        "formatter": False,
        "lsp": False,
        "snapshot": False,
        "mcp": {},
    }
    return json.dumps(config)


def cli_arguments(binary: Path, *, model: str, session: str | None) -> list[str]:
    """One round's command line; the prompt goes on stdin (an argument with spaces would be
    quoted into the message)."""
    resume = [f"--session={session}"] if session else []
    return [
        str(binary),
        "run",
        "--format",
        "json",
        "--model",
        f"anthropic/{model}",
        "--title",
        TITLE,
        *resume,
    ]


def environment(home: Path, *, config: str) -> dict[str, str]:
    """The CLI's own variables: every config, data and cache folder inside the run's home."""
    return {
        **ENVIRONMENT,
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENCODE_CONFIG_CONTENT": config,
    }
