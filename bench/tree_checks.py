"""Checks of a generated tree: its files against `schemas/`, and its digest.

The benches trust the generators to write what the real tools write; `--validate` checks a
sample, and the digest shows that a seed reproduces a tree byte for byte.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson


def validate_sample(root: Path, *, schema_for: dict[str, str], every: int = 25) -> int:
    """Check every `every`-th JSON file (and every iteration file) with jsonschema.

    `schema_for` maps file names to schema files; other JSON files (a run's outputs) are
    not checked. Raises ValueError naming the file and the first error; returns how many
    were checked.
    """
    import jsonschema

    schemas_dir = Path(__file__).resolve().parent.parent / "schemas"
    validators = {}
    for name, schema_file in schema_for.items():
        schema = orjson.loads((schemas_dir / schema_file).read_bytes())
        validators[name] = jsonschema.validators.validator_for(schema)(schema)
    paths = sorted(p for p in Path(root).rglob("*.json") if p.name in validators)
    sample = set(paths[::every]) | {p for p in paths if p.parent.name.startswith("iter")}
    for path in sorted(sample):
        error = jsonschema.exceptions.best_match(
            validators[path.name].iter_errors(orjson.loads(path.read_bytes()))
        )
        if error is not None:
            raise ValueError(f"{path} at /{'/'.join(map(str, error.path))}: {error.message}")
    return len(sample)


def tree_digest(root: Path) -> str:
    """sha256 over every file's path and bytes, to check that a seed reproduces a tree."""
    h = hashlib.sha256()
    for path in sorted(p for p in Path(root).rglob("*") if p.is_file()):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()
