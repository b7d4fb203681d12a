"""The Codex CLI (@openai/codex, installed by `manage.py installharnesses codex`): its fresh
configuration per run, and how one round is invoked."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic

NAME = "codex"
#: The provider evalsite configures, and the variable holding the run's placeholder key.
PROVIDER = "evalsite"
KEY_VARIABLE = "EVALSITE_CODEX_API_KEY"
#: Codex's own approval and sandbox, off: it runs inside evalsite's sandbox (bwrap, no
#: network, the task folder and its home the only writable places), which forbids further
#: user namespaces, so Codex's bundled bwrap could not start there; and with nobody to
#: approve anything, "never" lets a command run or fail rather than wait.
APPROVAL_POLICY = "never"
SANDBOX_MODE = "danger-full-access"
#: Features that would reach past the task (subagents, goals, plugins, apps, memories, hooks
#: from the task folder, image generation) or only slow a run (a login-shell snapshot).
DISABLED_FEATURES = (
    "goals",
    "plugins",
    "apps",
    "memories",
    "hooks",
    "image_generation",
    "shell_snapshot",
)


class CodexError(anthropic.APIError):
    """The CLI could not play a round (crashed, stopped by a limit, an API error after its
    retries). An APIError, so that the runner records the run as errored, never failed."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message, None, body=None)  # type: ignore[arg-type]
        self.timed_out = timed_out


def _toml(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value, ensure_ascii=False)


def config_toml(*, model: str, base_url: str) -> str:
    """`$CODEX_HOME/config.toml` for one round: the proxy as the only provider, no update
    checks, analytics, history file, web search, MCP servers or subagents, and none of the
    skills Codex bundles (a bundled skill-creator or imagegen would be listed in both arms,
    and shadow a skill under test of the same name): the staged skill is the only one."""
    features = "\n".join(f"{name} = false" for name in DISABLED_FEATURES)
    return f"""\
model = {_toml(model)}
model_provider = "{PROVIDER}"
approval_policy = "{APPROVAL_POLICY}"
sandbox_mode = "{SANDBOX_MODE}"
check_for_update_on_startup = false
web_search = "disabled"

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

[agents]
enabled = false

[features]
{features}

[mcp_servers]

[skills.bundled]
enabled = false

[model_providers.{PROVIDER}]
name = "evalsite proxy"
base_url = {_toml(base_url + "/v1")}
wire_api = "responses"
env_key = "{KEY_VARIABLE}"
"""


def cli_arguments(
    binary: Path, *, model: str, env: Path, prompt: str, thread_id: str | None
) -> list[str]:
    """One round's command line: a new session, or `exec resume` of the run's session."""
    common = ["--json", "--skip-git-repo-check", "--ignore-rules", "--strict-config", "-m", model]
    if thread_id is None:
        return [str(binary), "exec", *common, "--cd", str(env), "--", prompt]
    return [str(binary), "exec", "resume", *common, "--", thread_id, prompt]
