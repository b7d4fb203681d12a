"""Importing result folders: eval-magic iterations and baselines, skill-creator workspaces,
skill folders, and archives of any of these.

What the rest of evalsite uses, and all it may import from here: the import itself
(`import_workspace`, `ImportReport`, `ImportFailure`, uploads and their previews, a git
clone's promoted campaigns with `import_history`), reading eval
definitions (`parse_evals_json`, `parse_skill_md`, `read_text`, `EvalDefinition`), the
benchmark runevals writes beside a finished iteration (`iteration_benchmark`), and how
warnings name a run (`run_name`). The modules behind these are the importer's own.
"""

from __future__ import annotations

from .checks import run_name
from .definitions import parse_evals_json, parse_skill_md
from .errors import ImportFailure
from .finished import iteration_benchmark
from .history import import_history
from .jsonfiles import read_text
from .records import EvalDefinition
from .report import ImportReport
from .uploads import (
    Staged,
    UploadTooLarge,
    import_files,
    import_staged,
    import_upload,
    stage_upload,
)
from .workspace import import_workspace

__all__ = [
    "EvalDefinition",
    "ImportFailure",
    "ImportReport",
    "Staged",
    "UploadTooLarge",
    "import_files",
    "import_history",
    "import_staged",
    "import_upload",
    "import_workspace",
    "iteration_benchmark",
    "parse_evals_json",
    "parse_skill_md",
    "read_text",
    "run_name",
    "stage_upload",
]
