"""Importing result folders: eval-magic iterations and baselines, skill-creator workspaces,
skill folders, and archives of any of these."""

from __future__ import annotations

from .errors import ImportFailure
from .workspace import import_workspace
from .writer import ImportReport

__all__ = ["ImportFailure", "ImportReport", "import_workspace"]
