"""Finding what a folder holds, so the user never has to say which layout it is.

`placement.py` places every result file by what surrounds it (SPEC §3.6); `owners.py` says
which skill each iteration belongs to and how it is labelled. This module puts them together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .owners import Source, attribute
from .placement import NOT_CONFIGURATIONS, RESULT_FILES, place, workspace_folder_name
from .walk import HIDDEN_SEARCHED, is_snapshot, natural_key, walk


@dataclass
class Detection:
    sources: list[Source] = field(default_factory=list)
    #: (folder or file, reason) for results that no source covers, or that are not read.
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    #: JSON documents parsed while placing (benchmark.json by path), for the readers.
    documents: dict[Path, Any] = field(default_factory=dict)


def detect(path: Path) -> Detection:
    """Every importable unit under `path` (a folder), and the results left out."""
    placement = place(walk(path))
    sources, skipped, documents = attribute(path, placement)
    documents.update((file, data) for file, (_, data) in placement.triggers.items())
    return Detection(
        sources,
        sorted({**placement.skipped, **skipped}.items(), key=lambda i: natural_key(str(i[0]))),
        documents,
    )


__all__ = [
    "HIDDEN_SEARCHED",
    "NOT_CONFIGURATIONS",
    "RESULT_FILES",
    "Detection",
    "Source",
    "detect",
    "is_snapshot",
    "natural_key",
    "workspace_folder_name",
]
