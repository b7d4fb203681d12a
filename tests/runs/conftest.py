"""Fixtures of the runs tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from runs.importing import import_workspace
from tests.factories import eval_magic_iteration
from tests.runs.rows import row_counts


@pytest.fixture
def existing(tmp_path: Path) -> dict[str, int]:
    """Something already in the database, so 'nothing changed' means something."""
    import_workspace([eval_magic_iteration(tmp_path / "already", skill="already-there")])
    return row_counts()
