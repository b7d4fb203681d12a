"""Every harness `runevals --harness` can name, and how each is made or why it cannot run.

A harness is a class with the `Harness` protocol (harness.py), imported only when it is used
(a CLI harness's module reads its CLI's version). One that cannot run on this machine says
why in one line through an optional classmethod `problem() -> str | None` (its CLI is not
installed, its API's key is not set), which runevals prints before any work.
"""

from __future__ import annotations

import importlib
from typing import Any

from .harness import Harness

#: name → "module:Class". Recorded as conditions.json's `harness`.
HARNESSES: dict[str, str] = {
    "claude-code": "grading.evaluating.claude_code:ClaudeCodeHarness",
    "messages": "grading.evaluating.messages:MessagesHarness",
    "opencode": "grading.evaluating.opencode:OpenCodeHarness",
    "codex": "grading.evaluating.codex:CodexHarness",
    "gemini": "grading.evaluating.gemini:GeminiHarness",
    "cline": "grading.evaluating.cline:ClineHarness",
}


def names() -> list[str]:
    return list(HARNESSES)


def harness_class(name: str) -> Any:
    module, _, attribute = HARNESSES[name].partition(":")
    return getattr(importlib.import_module(module), attribute)


def problem(name: str) -> str | None:
    """Why `--harness NAME` cannot run here, or None."""
    if name not in HARNESSES:
        return f"unknown harness {name!r} (known: {', '.join(HARNESSES)})"
    check = getattr(harness_class(name), "problem", None)
    return check() if check is not None else None


def make(name: str) -> Harness:
    return harness_class(name)()
