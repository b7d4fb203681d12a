"""For the tests of the npm-registry harnesses: their CLI, or a skip that says how to get it."""

from __future__ import annotations

from pathlib import Path

import pytest

from grading.evaluating import agent_clis


def require_cli(harness: str) -> Path:
    """The installed CLI of `harness`; skips the test (saying how to install it) without one."""
    binary = agent_clis.cli_path(harness)
    if binary is None:
        pytest.skip(agent_clis.missing(harness))
    return binary
