"""`--harness gemini`: each run played by Gemini CLI (@google/gemini-cli 0.61.0).

Installed by `python manage.py installharnesses gemini` (agent_clis.py). Run once per round,
`gemini --output-format stream-json --approval-mode auto_edit --skip-trust --prompt=…`: the
opening prompt starts a session, every follow-up (a scripted turn or the `llm` responder's
reply) resumes it with `--resume <session id>` from the first round's init event, once the
recorded session is mended (session_mend.py: the CLI would resume with every function
response twice). The follow-up rules are the shared `Conversation`'s.

Isolation, per run:
- the skill is staged as a workspace skill (`.gemini/skills/<name>/`, where the CLI looks
  in a trusted workspace) in skill-loading conditions only, hidden from `git add` as for
  Claude Code (claude_code/staging.py);
- a fresh HOME beside the task folder (`<env>.home/`, removed with the run) holding the
  CLI's only user configuration: settings.json (API-key auth, telemetry, usage statistics
  and auto-update off, no MCP server, skills on) and a policy allowing the shell and
  activate_skill; the system settings and trusted-folders files point into it too, so
  neither /etc/gemini-cli nor the user's ~/.gemini (skills, extensions, GEMINI.md) is read;
- the CLI runs in the sandbox and reaches the API through the loopback bridge
  (sandbox/bridge.py) to an ApiProxy speaking Gemini's wire (wire.py), which holds the real
  GEMINI_API_KEY and the run's budget: the CLI's GEMINI_API_KEY is a placeholder valid for
  this run only, its GOOGLE_GEMINI_BASE_URL the bridge.

What a run leaves beside run.json: `gemini.json`, the dispatch's provenance (CLI version,
session, isolation, the proxy's count of calls, each round's status).
"""

from __future__ import annotations

from .cli import NAME, SKILLS_DIR, GeminiError, cli_path, cli_version
from .session import GeminiHarness
from .wire import GEMINI, GeminiWire

__all__ = [
    "GEMINI",
    "NAME",
    "SKILLS_DIR",
    "GeminiError",
    "GeminiHarness",
    "GeminiWire",
    "cli_path",
    "cli_version",
]
