"""Reading a folder's files once: their bytes for parsing and a digest for idempotency."""

from __future__ import annotations

import bisect
import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runs.warnings import ValidityWarning

from . import jsonfiles
from .errors import ImportFailure

#: Folders that are never results: eval-magic's agent working folders, VCS and tool caches.
SKIPPED_DIRS = {".git", "node_modules", "__pycache__", ".venv", "__MACOSX"}
SKIPPED_DIR_PREFIXES = ("env-",)
SKIPPED_FILES = {".DS_Store", "Thumbs.db"}
MiB = 1024 * 1024
#: Other files larger than this are not read (an `outputs/` artefact may be a large binary);
#: their name and size still count in the digest.
MAX_READ_BYTES = 8 * MiB
#: Result files are read whatever their size up to this: a long agent conversation is tens of
#: MiB, and dropping it silently would import the run without it. Beyond this the file is
#: refused rather than read, since parsing it would take gigabytes of memory.
MAX_RESULT_BYTES = 256 * MiB
#: The text files the importers parse, besides every `.json` file.
RESULT_TEXT_FILES = {"SKILL.md", "skill-snapshot.md", "BASELINE.md", "NOTES.md", "diff.patch"}
#: The folder of a run's agent artefacts: whatever their names, its files are not results.
ARTEFACT_DIR = "outputs"


def is_result_file(relpath: str) -> bool:
    """Whether the importers parse this file (so it must be read, however large)."""
    *folders, name = relpath.split("/")
    if ARTEFACT_DIR in folders:
        return False
    return name.endswith(".json") or name in RESULT_TEXT_FILES


def is_skipped_dir(name: str) -> bool:
    # Hidden folders hold tool state (runevals' templates and unfinished runs), not results.
    return name in SKIPPED_DIRS or name.startswith(SKIPPED_DIR_PREFIXES) or name.startswith(".")


@dataclass
class FileTree:
    """The files under `root`, keyed by POSIX path relative to it."""

    root: Path
    display: str
    files: dict[str, bytes] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    # Computed once: an iteration has hundreds of runs, each asking about its own files.
    _sorted: list[str] | None = field(default=None, repr=False)
    _hashes: dict[str, bytes] = field(default_factory=dict, repr=False)
    _digests: dict[str, str] = field(default_factory=dict, repr=False)
    #: JSON documents already parsed (not yet validated) by an earlier step, by path: a
    #: skill-creator benchmark.json is read for the skill's name before the iteration is.
    parsed: dict[str, Any] = field(default_factory=dict, repr=False)

    def get(self, relpath: str) -> bytes | None:
        return self.files.get(relpath)

    def json(self, relpath: str, kind: str | None = None) -> Any:
        """The parsed JSON of one file of the tree (validated against `kind` when given);
        a document an earlier step parsed is taken from `parsed`, not parsed again."""
        shown = self.shown(relpath)
        if relpath in self.parsed:
            data = self.parsed.pop(relpath)
        else:
            data = jsonfiles.parse_json(self.files[relpath], display=shown)
        if kind is not None:
            jsonfiles.validate(data, kind, display=shown)
        return data

    def under(self, prefix: str) -> list[str]:
        """The paths below `prefix` ("" = all), sorted; found by bisection, not a scan."""
        if self._sorted is None:
            self._sorted = sorted(self.sizes)
        if not prefix:
            return list(self._sorted)
        start = bisect.bisect_left(self._sorted, prefix)
        # Every path starting with `prefix` sorts before prefix + the highest code point.
        end = bisect.bisect_left(self._sorted, prefix + "\U0010ffff", start)
        return self._sorted[start:end]

    def shown(self, relpath: str) -> str:
        """How a file is named in messages: the user's path to the folder, then the file."""
        return f"{self.display}/{relpath}" if relpath else self.display

    def digest(self, prefix: str = "") -> str:
        """sha256 over the names and bytes of the files under `prefix` ("" = all)."""
        if prefix in self._digests:
            return self._digests[prefix]
        h = hashlib.sha256()
        for relpath in self.under(prefix):
            h.update(relpath.encode())
            h.update(b"\0")
            h.update(self._file_hash(relpath))
        self._digests[prefix] = digest = h.hexdigest()
        return digest

    def _file_hash(self, relpath: str) -> bytes:
        cached = self._hashes.get(relpath)
        if cached is None:
            data = self.files.get(relpath)
            if data is None:
                data = f"<{self.sizes[relpath]} bytes, not read>".encode()
            cached = self._hashes[relpath] = hashlib.sha256(data).digest()
        return cached


def _too_large(size: int, display: str) -> ImportFailure:
    return ImportFailure(
        f"{size} bytes ({size / MiB:.1f} MiB) is over the"
        f" {MAX_RESULT_BYTES // MiB} MiB limit for a result file",
        path=display,
    )


def read_result_file(path: Path, *, display: str) -> bytes:
    """One result file outside a tree (a skill's SKILL.md, an evals.json beside results),
    with the same size limit."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ImportFailure(f"cannot be read: {exc.strerror or exc}", path=display) from None
    if size > MAX_RESULT_BYTES:
        raise _too_large(size, display)
    return _read(str(path), display)


def read_head(path: Path, limit: int) -> bytes:
    """At most `limit` bytes from the start of a result file, opened as `_read` opens one:
    enough to tell what a file is without reading a large one whole."""
    return _read(str(path), str(path), limit=limit)


def _read(path: str, display: str, *, limit: int | None = None) -> bytes:
    """A file's bytes; a file the importer may not read is one line, not a traceback.

    Opened without following a link and without blocking, and checked on the descriptor:
    the folder was listed a moment ago, and what stands there now may have been swapped
    for a link to a host file or a FIFO.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        raise ImportFailure(f"cannot be read: {exc.strerror or exc}", path=display) from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise ImportFailure("is not a regular file; not read", path=display)
        # os.read, not a file object: a large tree has tens of thousands of small files,
        # and building a buffered reader for each was a quarter of read_tree's time.
        if limit is not None:
            return os.read(descriptor, limit)
        parts = [os.read(descriptor, info.st_size)] if info.st_size else []
        while chunk := os.read(descriptor, 1 << 20):  # a file that grew since its fstat
            parts.append(chunk)
    except OSError as exc:
        raise ImportFailure(f"cannot be read: {exc.strerror or exc}", path=display) from None
    finally:
        os.close(descriptor)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_tree(root: Path, *, display: str) -> FileTree:
    """Read every file below `root` except skipped folders and oversized artefacts.

    Raises ImportFailure for a result file over MAX_RESULT_BYTES.
    """
    tree = FileTree(root=root, display=display)
    stack = [(str(root), "")]  # strings, not Paths: a large tree has 10,000s of folders
    while stack:
        folder, prefix = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                relpath = prefix + entry.name
                if entry.is_symlink():
                    continue  # never follow links out of the folder being imported
                if entry.is_dir():
                    if not is_skipped_dir(entry.name):
                        stack.append((entry.path, relpath + "/"))
                elif entry.is_file() and entry.name not in SKIPPED_FILES:
                    size = entry.stat().st_size
                    tree.sizes[relpath] = size
                    result = is_result_file(relpath)
                    if result and size > MAX_RESULT_BYTES:
                        raise _too_large(size, tree.shown(relpath))
                    if result or size <= MAX_READ_BYTES:
                        tree.files[relpath] = _read(entry.path, tree.shown(relpath))
    return tree


def run_slots(
    tree: FileTree,
    cell: str,
    *,
    run_folders: Mapping[int, str],
    flat_files: Sequence[str],
    notices: list[ValidityWarning],
    empty_cell_is_a_run: bool = False,
) -> list[tuple[int, str]]:
    """(run index, path prefix) of each run of one `eval-…/<condition>` folder.

    Its `run-<k>/` folders (`run_folders`: index → prefix) are its runs; without them the
    folder itself is run 1, when it holds a run file (`flat_files`) or, for a layout that
    declares every condition folder a run slot, `empty_cell_is_a_run`. As in eval-magic and
    skill-creator, run folders win over flat run files beside them, which are named in a
    warning.
    """
    if run_folders and flat_files:
        params = {"folder": tree.shown(cell), "file": sorted(flat_files)[0]}
        notices.append(ValidityWarning("flat-run-file-ignored", params))
    if not run_folders:
        return [(1, f"{cell}/")] if flat_files or empty_cell_is_a_run else []
    return sorted(run_folders.items())
