"""`--harness codex`: each run played by the real Codex CLI (@openai/codex 0.171).

Installed by `python manage.py installharnesses codex` (agent_clis.py pins the release). One
`codex exec --json` per round: the opening prompt starts a session, and every follow-up (a
scripted turn or the `llm` responder's reply, the shared `Conversation`'s rules) resumes it
with `codex exec resume <session id>`.

Isolation, per run:
- the skill is staged where Codex discovers a repository's skills, `.agents/skills/<name>/`,
  in skill-loading conditions only, left out of git through `.git/info/exclude` (staging.py);
- a fresh HOME and CODEX_HOME beside the task folder (`<env>.home/`, removed with the run)
  holding the only config.toml Codex reads: one model provider, the proxy (`wire_api =
  "responses"`, its key in an environment variable holding the run's placeholder), no
  update check, analytics, feedback, history file, web search, MCP servers, subagents,
  plugins, apps, memories, hooks or bundled skills (the staged one is the only skill);
  `--strict-config`, so a key this release does not know fails loudly; `--ignore-rules`
  (no execpolicy files of the task folder's); the task folder's own `.codex/config.toml` is
  not read (an untrusted project's is not);
- Codex's own approvals and sandbox are off (`approval_policy = "never"`, `sandbox_mode =
  "danger-full-access"`): the CLI runs inside evalsite's sandbox (`grading.sandbox`: no
  network, the task folder and its home the only writable places, no further user
  namespaces, so Codex's bundled bwrap could not start there anyway), and reaches the API
  only through the loopback bridge (sandbox/bridge.py) to the Unix socket of
  apiproxy.ApiProxy speaking the Responses API (wire.py), which holds OPENAI_API_KEY and
  the run's budget.

The JSONL events map to conversation events as eval-magic reads them (events.py); skill
invocation is a reading command on the staged SKILL.md, anything else not observable. Another
copy of the skill among a run's fixtures is its `skill-shadow.json` and the iteration's
skill-shadow warning, as for Claude Code (shadow.py).
"""

from __future__ import annotations

from .cli import NAME, CodexError, config_toml
from .events import skills_read, transcribe
from .session import SKILLS_DIR, CodexHarness
from .wire import RESPONSES, ResponsesMeter, ResponsesWire

__all__ = [
    "NAME",
    "RESPONSES",
    "SKILLS_DIR",
    "CodexError",
    "CodexHarness",
    "ResponsesMeter",
    "ResponsesWire",
    "config_toml",
    "skills_read",
    "transcribe",
]
