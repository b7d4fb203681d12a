"""Importing result folders: eval-magic iterations and baselines, skill-creator workspaces,
skill folders, and archives of any of these."""

from __future__ import annotations

from .errors import ImportFailure
from .report import ImportReport
from .workspace import import_workspace

__all__ = ["ImportFailure", "ImportReport", "import_workspace"]
