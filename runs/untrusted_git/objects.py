"""Objects by id through one `git cat-file --batch`: no path is parsed by git, no filter runs.

Trees are parsed as they stream in and held to `max_tree_entries` each, and the cache of
trees (consecutive commits share most of theirs) to the same number of entries in all: a
crafted tree of millions of entries stops with one line instead of growing memory.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .process import GitError

if TYPE_CHECKING:
    from .process import GitStream

#: Regular files; "100664" is what very old gits wrote for them.
BLOB_MODES = {"100644", "100755", "100664"}
TREE_MODE = "40000"
OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
#: No file system takes a longer name; a tree holding one is crafted.
MAX_NAME_BYTES = 4096


@dataclass(frozen=True, slots=True)
class TreeEntry:
    name: str
    mode: str
    oid: str


def safe_name(name: str) -> bool:
    """Whether a tree entry's name is one component: git fsck refuses the others, but nothing
    makes a clone run fsck on what it fetched."""
    return name not in {"", ".", ".."} and "/" not in name and "\0" not in name


class ObjectReader:
    """Asks `git cat-file --batch` for objects by id, one at a time."""

    def __init__(self, out: GitStream, *, max_tree_entries: int) -> None:
        self.out = out
        self.max_tree_entries = max_tree_entries
        self._trees: OrderedDict[str, list[TreeEntry]] = OrderedDict()
        self._held = 0

    def header(self, oid: str) -> tuple[str, int]:
        """(type, size) of `oid`, whose bytes must then be read (`chunks`) or skipped."""
        if not OBJECT_ID.fullmatch(oid):
            raise GitError(f"{oid!r} is not an object id")
        self.out.write(oid.encode() + b"\n")
        line = self.out.read_until(b"\n", limit=200)
        if line is None:
            raise self.out.ended("git cat-file stopped")
        fields = line.split()
        if len(fields) != 3 or not fields[2].isdigit():
            raise GitError(f"object {oid} is missing from the repository (a shallow clone?)")
        return fields[1].decode("ascii", errors="replace"), int(fields[2])

    def chunks(self, size: int) -> Iterator[bytes]:
        """The object's bytes in pieces, then past git's newline after them."""
        yield from self.out.chunks(size)
        for _ in self.out.chunks(1):
            pass

    def read(self, oid: str, *, kind: str = "blob", limit: int | None = None) -> bytes | None:
        """An object's bytes; None (and skipped over) when larger than `limit`."""
        found, size = self.header(oid)
        if found != kind:
            raise GitError(f"object {oid} is a {found}, not a {kind}")
        if limit is not None and size > limit:
            for _ in self.chunks(size):
                pass
            return None
        return b"".join(self.chunks(size))

    def tree(self, oid: str) -> list[TreeEntry]:
        entries = self._trees.get(oid)
        if entries is not None:
            self._trees.move_to_end(oid)
            return entries
        entries = self._parse_tree(oid)
        self._trees[oid] = entries
        self._held += len(entries)
        while self._held > self.max_tree_entries and len(self._trees) > 1:
            _, dropped = self._trees.popitem(last=False)
            self._held -= len(dropped)
        return entries

    def _parse_tree(self, oid: str) -> list[TreeEntry]:
        found, size = self.header(oid)
        if found != "tree":
            raise GitError(f"object {oid} is a {found}, not a tree")
        id_bytes = len(oid) // 2  # a SHA-256 repository's trees hold 32-byte ids
        entries: list[TreeEntry] = []
        pending = b""
        for chunk in self.chunks(size):
            pending += chunk
            start = 0
            while (nul := pending.find(b"\0", start)) >= 0 and nul + id_bytes < len(pending):
                space = pending.find(b" ", start, nul)
                if space < 0:
                    raise GitError(f"tree {oid} is corrupt")
                name = os.fsdecode(pending[space + 1 : nul])
                mode = pending[start:space].decode("ascii", errors="replace")
                entries.append(TreeEntry(name, mode, pending[nul + 1 : nul + 1 + id_bytes].hex()))
                start = nul + 1 + id_bytes
            if len(entries) > self.max_tree_entries:
                raise GitError(
                    f"tree {oid} holds more than {self.max_tree_entries} entries "
                    "(limit EVALSITE_GIT_MAX_TREE_ENTRIES)"
                )
            pending = pending[start:]
            if len(pending) > MAX_NAME_BYTES + 64:
                raise GitError(f"tree {oid} holds a name longer than {MAX_NAME_BYTES} bytes")
        if pending:
            raise GitError(f"tree {oid} is corrupt")
        return entries

    def lookup(self, tree: str, path: str) -> TreeEntry | None:
        """The entry at `path` ("/"-separated, "" for `tree` itself) below `tree`, or None."""
        found: TreeEntry | None = TreeEntry("", TREE_MODE, tree)
        for name in filter(None, path.split("/")):
            if found is None or found.mode != TREE_MODE:
                return None
            found = next((e for e in self.tree(found.oid) if e.name == name), None)
        return found
