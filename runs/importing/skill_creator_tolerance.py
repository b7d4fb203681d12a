"""What skill-creator's own reader tolerates in its loose files, and so does evalsite's:
a `null` for an optional key, a grading that cannot be read (with keep-going), a run with
outputs and no grading; each said once per iteration in a validity warning."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from runs.warnings import MAX_NAMED, ValidityWarning, named

from . import jsonfiles
from .errors import ImportFailure
from .tree import FileTree

#: How each kind of file read leniently is named in a warning.
FILE_NAMES = {
    "skill-creator-grading": "grading.json",
    "timing": "timing.json",
    "skill-creator-eval-metadata": "eval_metadata.json",
    "skill-creator-benchmark": "benchmark.json",
    "skill-creator-feedback": "feedback.json",
}
INDEX = re.compile(r"/\d+(?=/|$)")


@dataclass
class Tolerated:
    """What an iteration's reader let through, said once per kind of file.

    skill-creator's aggregator and viewer read `null` as a missing key, skip a grading that
    is not JSON, and count a run without grading.json as not graded; so does this reader,
    never silently. The schemas stay strict for what skill-creator always writes (an
    expectation's `text` and `passed`): only a null the schema refuses for a key it does not
    require is dropped, and a file still invalid without its nulls is refused as it was.
    """

    keep_going: bool = False
    #: kind -> [(file shown, pointers of the nulls dropped)]
    nulls: dict[str, list[tuple[str, list[str]]]] = field(default_factory=dict)
    #: One-line errors of gradings read as missing (keep-going only).
    unread_gradings: list[str] = field(default_factory=list)
    #: Run folders (relative to the iteration) with outputs/ and no grading.json.
    outputs_only: list[str] = field(default_factory=list)
    notices: list[ValidityWarning] = field(default_factory=list)

    def load(self, tree: FileTree, relpath: str, kind: str) -> Any:
        """A file of the tree, parsed and validated leniently."""
        return self.validated(tree.json(relpath), kind, display=tree.shown(relpath))

    def validated(self, data: Any, kind: str, *, display: str) -> Any:
        """`data` if it fits the schema, else `data` without the nulls the schema refuses
        where they are optional, if that fits; else the ImportFailure of what remains."""
        try:
            jsonfiles.validate(data, kind, display=display)
            return data
        except ImportFailure:
            dropped: list[str] = []
            cleaned = _without_refused_nulls(data, jsonfiles.schema(kind), "", dropped)
            if not dropped:
                raise
        # If it is still invalid, the error that remains is the one to fix (its pointer holds
        # in the file as written: only object keys were dropped).
        jsonfiles.validate(cleaned, kind, display=display)
        self.nulls.setdefault(kind, []).append((display, dropped))
        return cleaned

    def warnings(self) -> list[ValidityWarning]:
        found = list(self.notices)
        for kind, files in self.nulls.items():
            fields = sorted({INDEX.sub("/*", p) for _, pointers in files for p in pointers})
            listed = named([shown for shown, _ in files])
            params = {
                "fields": fields[:MAX_NAMED],
                "n": len(files),
                "file": FILE_NAMES[kind],
                "files": listed["runs"],
                "unnamed": listed["unnamed"],
            }
            found.append(ValidityWarning("nulls-read-as-missing", params))
        if self.unread_gradings:
            listed = named(self.unread_gradings)
            params = {
                "n": len(self.unread_gradings),
                "problems": listed["runs"],
                "unnamed": listed["unnamed"],
            }
            found.append(ValidityWarning("gradings-not-read", params))
        if self.outputs_only:
            params = {"n": len(self.outputs_only), **named(self.outputs_only)}
            found.append(ValidityWarning("outputs-without-grading", params))
        return found


def _without_refused_nulls(data: Any, schema: Any, pointer: str, dropped: list[str]) -> Any:
    """A copy of `data` without the null values of optional keys whose schema refuses null
    (only `properties` and `items` are followed: the skill-creator schemas use no more)."""
    if not isinstance(schema, dict):
        return data
    if isinstance(data, dict):
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        kept = {}
        for key, value in data.items():
            sub = properties.get(key)
            where = pointer + jsonfiles.json_pointer([key])
            if value is None and sub is not None and key not in required and not _nullable(sub):
                dropped.append(where)
                continue
            kept[key] = _without_refused_nulls(value, sub, where, dropped) if sub else value
        return kept
    if isinstance(data, list) and isinstance(schema.get("items"), dict):
        return [
            _without_refused_nulls(value, schema["items"], f"{pointer}/{index}", dropped)
            for index, value in enumerate(data)
        ]
    return data


def _nullable(schema: dict[str, Any]) -> bool:
    types = schema.get("type")
    if types is None:
        return "enum" not in schema or None in schema["enum"]
    return "null" in (types if isinstance(types, list) else [types])
