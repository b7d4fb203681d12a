"""Gemini CLI: where it is, its version, its per-run configuration, and how it is invoked."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic

from .. import agent_clis

NAME = "gemini"
#: Where Gemini CLI 0.61 discovers a workspace's skills (`Storage.getProjectSkillsDir`),
#: read only in a trusted workspace (hence --skip-trust).
SKILLS_DIR = ".gemini/skills"
#: auto_edit lets write_file and replace write inside the workspace only (the CLI's
#: `allowed-path` safety checker refuses any other path); the policy below adds the shell,
#: which runs in evalsite's sandbox, and activate_skill, the skill tool. Anything else that
#: asks for approval is denied, as nobody is there to give it headless. yolo would allow
#: every tool, MCP's and extensions' included: more than an eval run needs.
APPROVAL_MODE = "auto_edit"
ALLOWED_TOOLS = ("run_shell_command", "activate_skill")
#: A user-tier policy (~/.gemini/policies/): it outranks the default tier's headless denials.
POLICY = f"""# evalsite: what a headless eval run may do without asking (see cli.py)
[[rule]]
toolName = {json.dumps(list(ALLOWED_TOOLS))}
decision = "allow"
priority = 100
allowRedirection = true
"""
#: ~/.gemini/settings.json of every run's fresh HOME: an API key, nothing sent to Google
#: but the API calls, no update check, no MCP server, skills on.
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "general": {
        "enableAutoUpdate": False,
        "enableAutoUpdateNotification": False,
        "checkpointing": {"enabled": False},
    },
    "telemetry": {"enabled": False, "logPrompts": False},
    "privacy": {"usageStatisticsEnabled": False},
    "mcpServers": {},
    "skills": {"enabled": True},
}
ENVIRONMENT = {
    # Not re-exec'd under a bigger heap: one process, inside the sandbox's limits.
    "GEMINI_CLI_NO_RELAUNCH": "true",
    "NO_COLOR": "1",
}


class GeminiError(anthropic.APIError):
    """The CLI could not play a round (crashed, stopped by a limit, an API error after its
    retries). An APIError, so that the runner records the run as errored, never failed."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message, None, body=None)  # type: ignore[arg-type]
        self.timed_out = timed_out


def cli_path() -> Path | None:
    return agent_clis.cli_path(NAME)


def cli_version(binary: Path) -> str:
    """`0.61.0`, what `gemini --version` prints."""
    return agent_clis.cli_version(binary)


def write_home(home: Path) -> None:
    """The fresh HOME's configuration: settings.json and the policy above.

    The system settings, system defaults and trusted-folders files are pointed into it too
    (`environment`), so that nothing under /etc/gemini-cli or the user's own ~/.gemini is read.
    """
    gemini = home / ".gemini"
    (gemini / "policies").mkdir(parents=True, exist_ok=True)
    (gemini / "settings.json").write_text(json.dumps(SETTINGS, indent=2), encoding="utf-8")
    (gemini / "policies" / "evalsite.toml").write_text(POLICY, encoding="utf-8")
    system = home / "system"
    system.mkdir(exist_ok=True)
    (system / "settings.json").write_text("{}", encoding="utf-8")
    (system / "system-defaults.json").write_text("{}", encoding="utf-8")


def environment(home: Path, *, base_url: str, key: str) -> dict[str, str]:
    return {
        **ENVIRONMENT,
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(home / "system" / "settings.json"),
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(home / "system" / "system-defaults.json"),
        "GEMINI_CLI_TRUSTED_FOLDERS_PATH": str(home / ".gemini" / "trustedFolders.json"),
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_API_KEY": key,
    }


def cli_arguments(binary: Path, *, model: str, resume: str | None, prompt: str) -> list[str]:
    """One round's command line: headless, stream-json, the workspace trusted for the run
    (its .gemini/skills are read only then), resuming the session after the first round."""
    session = ["--resume", resume] if resume else []
    return [
        str(binary),
        "--output-format",
        "stream-json",
        "--model",
        model,
        "--approval-mode",
        APPROVAL_MODE,
        "--skip-trust",
        *session,
        # One argument, so a prompt starting with "-" is never read as an option.
        f"--prompt={prompt}",
    ]
