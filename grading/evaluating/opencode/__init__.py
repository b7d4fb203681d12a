"""`--harness opencode`: each run played by the OpenCode CLI (npm `opencode-ai`).

Installed by `python manage.py installharnesses opencode` (agent_clis.py pins the release).
OpenCode speaks the Anthropic Messages API, so it gets what Claude Code gets: the run's
apiproxy.ApiProxy (the real key, the run's budget, every call counted) on a Unix socket
bind-mounted into the sandbox, reached through the sandbox's own loopback port
(grading.sandbox.bridge), with a placeholder key valid for this run only.

Per run: the skill staged in skill-loading conditions as a project skill
(`.opencode/skills/<name>/`, hidden from `git add` as Claude Code's is), a fresh HOME and
XDG config, data and cache folders beside the task folder (`<env>.home/`, removed with the
run), and the config passed inline (cli.py). Each round is one `opencode run --format json`;
a follow-up (scripted turn or the `llm` responder's) continues the session with `--session`.
The events map to conversation.json as Claude Code's do (stream.py); the `skill` tool's call
is the run's skill invocation.
"""

from __future__ import annotations

from .cli import NAME, OpenCodeError, cli_path
from .session import OpenCodeHarness

__all__ = ["NAME", "OpenCodeError", "OpenCodeHarness", "cli_path"]
