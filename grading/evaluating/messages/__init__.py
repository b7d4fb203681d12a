"""`--harness messages`: evalsite's own agent over the Messages API (SPEC §6).

Each round is a loop of API calls with tool use (agent.py); the tools are Claude Code's names
and argument shapes (tooldefs.py), run inside the task folder by `tools.Toolbox`, with the
file tools' safe reads and writes in toolfiles.py and Bash in the sandbox.
"""

from __future__ import annotations

from .agent import MessagesHarness

__all__ = ["MessagesHarness"]
