"""`--harness cline`: each run played by the real Cline CLI (npm `cline` 3.0.65).

Installed with `python manage.py installharnesses cline` into EVALSITE_HARNESS_DIR. The CLI
speaks OpenAI's chat completions through its `openai-compatible` provider, so its calls go
through apiproxy.ApiProxy with the chat-completions wire (wire.py), which holds the real
OPENAI_API_KEY (upstream OPENAI_BASE_URL, default https://api.openai.com/v1) and the run's
budget; the CLI gets a placeholder key and, as its base URL, a loopback port of its sandbox
bridged to the proxy's Unix socket (grading.sandbox.bridge).

Per run: the skill is staged where Cline discovers a workspace's skills, `.cline/skills/<name>/`
(hidden from `git add`, as for Claude Code); a fresh HOME and CLINE_DIR beside the task folder
(`<env>.home/`, removed with the run) hold the provider's settings, written as `cline auth`
would, and global settings with telemetry and update checks off; the session runs in the
CLI's own process (`CLINE_SESSION_BACKEND_MODE=local`: no background hub daemon). The task is
one `cline --json --act --auto-approve true --cwd <env> -- <prompt>` in the sandbox (network
unshared), stdin closed. Its JSON lines map to conversation events (stream.py); a call of
Cline's own skill tool, `skills` {"skill": name}, is recorded as the `Skill` call
`__skill_invoked` reads, so invocation is a deterministic tool call, as eval-magic reads it.

Known limit: Cline 3.0.65 cannot resume a session headless (`--id` forces interactive mode,
which `--json` refuses; eval-magic found the same in 3.0.52), so a run whose eval delivers a
follow-up (a scripted turn, an `llm` responder's reply) is errored when the follow-up is due,
saying so; a conversation that ends after its first round (the agent did not ask, the
responder is done) is played and graded as on any harness.
"""

from __future__ import annotations

from .cli import NAME, ClineError, cli_path, cli_version
from .session import SKILLS_DIR, ClineHarness

__all__ = ["NAME", "SKILLS_DIR", "ClineError", "ClineHarness", "cli_path", "cli_version"]
