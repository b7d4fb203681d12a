"""Importing result folders: eval-magic iterations and baselines, skill-creator workspaces,
skill folders, and archives of any of these.

What the rest of evalsite uses, and all it may import from here: the import itself
(`import_workspace`, `ImportReport`, `ImportFailure`, uploads and their previews, a git
clone's promoted campaigns with `import_history`), reading eval
definitions (`parse_evals_json`, `parse_skill_md`, `read_text`, `EvalDefinition`) and trigger
sets (`read_trigger_set`), the benchmark runevals writes beside a finished iteration
(`iteration_benchmark`), and how warnings name a run (`run_name`). The modules behind these
are the importer's own.
"""

from __future__ import annotations

from typing import Any

from . import trigger_sets, triggers
from .checks import run_name
from .definitions import parse_evals_json, parse_skill_md
from .errors import ImportFailure
from .finished import iteration_benchmark
from .history import import_history
from .jsonfiles import read_text
from .records import EvalDefinition
from .report import ImportReport
from .strictjson import parse_json
from .uploads import (
    Staged,
    UploadTooLarge,
    import_files,
    import_staged,
    import_upload,
    stage_upload,
)
from .workspace import import_workspace


def read_trigger_set(
    raw: bytes, *, display: str, skill_name: str | None = None
) -> list[dict[str, Any]]:
    """The queries of a trigger set file (any shape SPEC §3.5 lists), as the importer reads
    them: `[{"query", "should_trigger", …}]`, one per text (a repeated query is one query).

    Where the file groups sets by skill, `skill_name`'s (or the only one); ImportFailure
    naming `display` when the file is not JSON, holds no set (results, say) or no set of
    that skill.
    """
    data = parse_json(raw, display=display)
    if triggers.sniff(data) != triggers.SET:
        raise ImportFailure(
            "expected a trigger set: a list of {query, should_trigger} (or a shape SPEC §3.5 "
            "lists), not results or another document",
            path=display,
        )
    sets = trigger_sets.read_sets(data, display)
    chosen = [s for s in sets if s.skill_name in (None, skill_name)] if len(sets) > 1 else sets
    if not chosen:
        named = ", ".join(sorted({s.skill_name or "" for s in sets}))
        raise ImportFailure(f"no trigger set for {skill_name!r} (it holds {named})", path=display)
    queries: dict[str, dict[str, Any]] = {}
    for found in chosen:
        for query in found.queries:
            queries.setdefault(query["query"], query)
    return list(queries.values())


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
    "read_trigger_set",
    "run_name",
    "stage_upload",
]
