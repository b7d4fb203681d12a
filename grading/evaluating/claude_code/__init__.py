"""`--harness claude-code`: each run played by the real Claude Code CLI.

The CLI comes inside the `claude-agent-sdk` wheel (`pip install -e '.[claude-code]'`); it is
run directly, `claude -p --output-format stream-json`, once per round: the opening prompt
starts a session and every follow-up (a scripted turn or the `llm` responder's reply)
resumes it with `--resume`, as eval-magic's multi-turn dispatch does. The follow-up rules
are the shared `Conversation`'s (conversation.py): only the rounds differ.

Isolation, per run:
- the skill is staged as a project skill (`.claude/skills/<name>/`) in skill-loading
  conditions only, hidden from `git add` through the task's `.git/info/exclude`, so that
  diff_scope counts what the agent changed, not what was staged (eval-magic too leaves its
  own files out), and both arms' `git status` look alike (staging.py);
- a fresh HOME and CLAUDE_CONFIG_DIR beside the task folder (`<env>.home/`, outside its git
  tree, removed with the run), `--setting-sources project,local` (no user settings, skills
  or plugins), `--strict-mcp-config`, and CLAUDE.md files above the task folder excluded;
- permissions without `--dangerously-skip-permissions` (which the CLI refuses as root):
  `acceptEdits`, an allow-list of tools and `--permission-prompts none`, so anything else
  is refused and recorded as a permission denial;
- the CLI runs in the sandbox (`grading.sandbox`: no network, the task folder and its home the
  only writable places) and reaches the API only through a Unix socket bind-mounted into it
  (`ANTHROPIC_UNIX_SOCKET`, the CLI's own way to talk to a host-side endpoint), served by
  apiproxy.ApiProxy, which holds the real key and the run's budget: the CLI gets a
  placeholder key valid for this run only.

What a run leaves for the iteration (findings.py): `skill-shadow.json`, every other copy of
the skill under test the CLI could discover, and `claude-code.json`, the dispatch's
provenance and permission denials; `skill_shadow_warnings` and `permission_denials_report`
turn an iteration's into its warning and eval-magic's permission-denials.json.
"""

from __future__ import annotations

from .cli import NAME, ClaudeCodeError, available, cli_path, cli_version
from .findings import permission_denials_report, skill_shadow, skill_shadow_warnings
from .session import ClaudeCodeHarness, artifacts
from .staging import stage_skill

__all__ = [
    "NAME",
    "ClaudeCodeError",
    "ClaudeCodeHarness",
    "artifacts",
    "available",
    "cli_path",
    "cli_version",
    "permission_denials_report",
    "skill_shadow",
    "skill_shadow_warnings",
    "stage_skill",
]
