"""Reading a git repository's objects without a checkout: one `git cat-file --batch`.

Used by `--history` (history.py). A clone is as untrusted as an uploaded archive: git runs
with options a clone's own config cannot override, objects are asked for by id only (no path
is parsed by git), and what is written is held to the archive limits.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from .errors import ImportFailure
from .tree import SKIPPED_FILES, is_skipped_dir

#: Config a clone's own settings must not override while we read it: no pager, no external
#: diff or signature checks, and paths as they are (not relative, not followed).
GIT_OPTIONS = [
    "--no-pager",
    "--literal-pathspecs",
    *("-c", "core.fsmonitor=false"),
    *("-c", "diff.relative=false"),
    *("-c", "log.follow=false"),
    *("-c", "log.showSignature=false"),
]
#: Variables a calling hook or script may export that would point git at another repository.
REPOSITORY_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
)
CHUNK = 1 << 20
#: Regular files; "100664" is what very old gits wrote for them.
BLOB_MODES = {"100644", "100755", "100664"}
#: A `.git` file is a link to some repository's internals, never a result.
NOT_WRITTEN = SKIPPED_FILES | {".git"}


@dataclass(frozen=True)
class TreeEntry:
    name: str
    mode: str
    oid: str


def git_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in REPOSITORY_VARIABLES}
    # A partial clone would fetch missing blobs from its remote; reading history stays local.
    env.update(GIT_NO_LAZY_FETCH="1", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    return env


def run_git(folder: Path, *args: str, failure: str) -> bytes:
    try:
        done = subprocess.run(
            ["git", *GIT_OPTIONS, "-C", str(folder), *args],
            env=git_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except OSError as exc:
        raise ImportFailure(f"could not run git: {exc.strerror or exc}") from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise ImportFailure(
            f"{failure} (git: {lines[0].removeprefix('fatal: ')})" if lines else failure
        )
    return done.stdout


def safe_name(name: str) -> bool:
    # git fsck refuses these, but nothing makes a clone run fsck on what it fetched.
    return name not in {"", ".", ".."} and "/" not in name and "\0" not in name


class GitObjects:
    """One `git cat-file --batch` serving every tree and blob of a history import.

    Objects are asked for by id only, so no path (spaces, newlines, colons) is ever parsed
    by git; trees are cached because consecutive commits share most of them. What it writes
    is held to the archive limits, as a clone is as untrusted as an uploaded archive.
    """

    def __init__(self, top: Path, *, given: str) -> None:
        #: The clone's top folder, and the path as the user gave it (for messages).
        self.top = top
        self.given = given
        self.oid_bytes = 20
        self.written = self.files_written = 0
        self.trees: dict[str, list[TreeEntry]] = {}
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> GitObjects:
        try:
            self.process = subprocess.Popen(
                ["git", *GIT_OPTIONS, "-C", str(self.top), "cat-file", "--batch"],
                env=git_environment(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError as exc:
            raise ImportFailure(f"could not run git: {exc.strerror or exc}") from None
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None and self.process.stdin is not None
        with suppress(OSError):
            self.process.stdin.close()
        self.process.kill()  # it may be mid-way through an object we stopped reading
        self.process.wait()

    def _ask(self, oid: str) -> tuple[str, int]:
        assert self.process is not None and self.process.stdin and self.process.stdout
        try:
            self.process.stdin.write(oid.encode() + b"\n")
            self.process.stdin.flush()
        except OSError:
            raise ImportFailure("git cat-file stopped", path=str(self.top)) from None
        header = self.process.stdout.readline().split()
        if len(header) != 3:
            raise ImportFailure(
                f"object {oid} is missing from the clone (a shallow or partial clone?)",
                path=str(self.top),
            )
        return header[1].decode(), int(header[2])

    def _chunks(self, size: int) -> Iterator[bytes]:
        assert self.process is not None and self.process.stdout is not None
        left = size + 1  # the object, then git's newline
        while left:
            chunk = self.process.stdout.read(min(left, CHUNK))
            if not chunk:
                raise ImportFailure("git cat-file stopped mid-object", path=str(self.top))
            left -= len(chunk)
            yield chunk[:-1] if not left else chunk

    def read(self, oid: str, *, limit: int | None = None, kind: str = "blob") -> bytes | None:
        """An object's bytes; None (and skipped over) when larger than `limit`."""
        found, size = self._ask(oid)
        if found != kind:
            raise ImportFailure(f"object {oid} is a {found}, not a {kind}", path=str(self.top))
        if limit is not None and size > limit:
            for _ in self._chunks(size):
                pass  # past it, to the next object
            return None
        return b"".join(self._chunks(size))

    def tree(self, oid: str) -> list[TreeEntry]:
        if oid not in self.trees:
            self.trees[oid] = self._parse_tree(oid, self.read(oid, kind="tree") or b"")
        return self.trees[oid]

    def _parse_tree(self, oid: str, data: bytes) -> list[TreeEntry]:
        entries, pos = [], 0
        try:
            while pos < len(data):
                space = data.index(b" ", pos)
                nul = data.index(b"\0", space)
                end = nul + 1 + self.oid_bytes
                name = os.fsdecode(data[space + 1 : nul])
                entries.append(TreeEntry(name, data[pos:space].decode(), data[nul + 1 : end].hex()))
                pos = end
        except ValueError:
            raise ImportFailure(f"tree {oid} is corrupt", path=str(self.top)) from None
        return entries

    def lookup(self, tree: str, path: str) -> TreeEntry | None:
        """The entry at `path` below `tree`, or None."""
        found: TreeEntry | None = TreeEntry("", "40000", tree)
        for name in path.split("/"):
            if found is None or found.mode != "40000":
                return None
            found = next((e for e in self.tree(found.oid) if e.name == name), None)
        return found

    def files(self, tree: str, *, display: str = "") -> list[tuple[str, str]]:
        """(relative path, blob id) of every regular file below `tree`.

        What a folder import leaves out is never written: links (it never follows one),
        submodules, `.git`, agent working folders and hidden tool state. A name that could
        escape the folder is refused outright: only a crafted repository holds one.
        """
        found: list[tuple[str, str]] = []
        stack = [(tree, "")]
        while stack:
            oid, prefix = stack.pop()
            for entry in self.tree(oid):
                if not safe_name(entry.name):
                    raise ImportFailure(
                        f"refused: a tree entry named {entry.name!r}, which git itself rejects",
                        path=f"{display}/{prefix}".rstrip("/") or str(self.top),
                    )
                if entry.mode == "40000":
                    if not is_skipped_dir(entry.name):
                        stack.append((entry.oid, f"{prefix}{entry.name}/"))
                elif entry.mode in BLOB_MODES and entry.name not in NOT_WRITTEN:
                    found.append((prefix + entry.name, entry.oid))
        return found

    def write(self, oid: str, dest: Path) -> None:
        """Stream a blob to `dest`, checking the limits before reading a byte of it."""
        kind, size = self._ask(oid)
        if kind != "blob":
            raise ImportFailure(f"object {oid} is a {kind}, not a blob", path=str(self.top))
        self.files_written += 1
        self.written += size
        if self.files_written > settings.EVALSITE_ARCHIVE_MAX_FILES:
            raise ImportFailure(
                f"its history holds more than {settings.EVALSITE_ARCHIVE_MAX_FILES} result "
                "files (limit EVALSITE_ARCHIVE_MAX_FILES)",
                path=self.given,
            )
        if self.written > settings.EVALSITE_ARCHIVE_MAX_BYTES:
            raise ImportFailure(
                f"its history holds more than {settings.EVALSITE_ARCHIVE_MAX_BYTES} bytes of "
                "results (limit EVALSITE_ARCHIVE_MAX_BYTES)",
                path=self.given,
            )
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "wb") as out:
            for chunk in self._chunks(size):
                out.write(chunk)
