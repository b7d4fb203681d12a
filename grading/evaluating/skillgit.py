"""git on a skill folder: revision mode's `--baseline <git ref>`, read as untrusted.

A skill folder is its author's, and so is its repository's config: `git show` there ran the
command a partial clone's promisor remote named, and `git archive` runs the smudge filters
its attributes name. So git runs only through runs.untrusted_git (config neutralised, objects
by id, alternates and links out refused) and, wherever the sandbox can run and runevals was
not told `--unsafe-no-sandbox`, inside it as well: no network, nothing of this machine but the
system and the repository's git dir, read-only, and the sandbox's limits. Where it cannot run,
the neutralised config alone stands, as it does for `importworkspace --history`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath

from django.conf import settings

from grading import sandbox
from grading.sandbox import hostfiles
from grading.sandbox.hostfiles import SKILL_MD_MAX_BYTES
from runs.untrusted_git import (
    BLOB_MODES,
    GitError,
    NotARepository,
    ObjectReader,
    Repository,
    open_repository,
    safe_name,
)

#: git reads a few objects: far below an agent command's limits.
GIT_LIMITS = sandbox.Limits(
    wall_seconds=120.0,
    cpu_seconds=120,
    max_processes=16,
    file_bytes=16 * 1024**2,
    tmp_bytes=16 * 1024**2,
)
TREE_MODE = "40000"
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@contextlib.contextmanager
def _in_sandbox(
    argv: Sequence[str], *, env: Mapping[str, str], reads: Sequence[Path]
) -> Iterator[subprocess.Popen[bytes]]:
    """runs.untrusted_git's launcher, through the sandbox; the git dirs bound read-only."""
    scratch = Path(tempfile.mkdtemp(prefix="evalsite-git-"))  # the sandbox's own folder
    try:
        try:
            process = sandbox.spawn(
                list(argv),
                folder=scratch,
                env=env,
                limits=GIT_LIMITS,
                ro_binds=[(path, path) for path in reads],
            )
        except sandbox.SandboxError as exc:
            raise GitError(f"could not start git in the sandbox: {exc}") from None
        try:
            yield process
        finally:
            sandbox.kill_tree(process)
            for pipe in (process.stdin, process.stdout):  # stderr: its reader closes it
                with contextlib.suppress(OSError):
                    pipe.close()  # type: ignore[union-attr]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def skill_repository(skill_dir: Path) -> Repository:
    """The repository the skill folder is in, checked and with its launcher chosen."""
    sandboxed = not sandbox.is_unsandboxed() and sandbox.sandbox_problem() is None
    try:
        return open_repository(skill_dir, launcher=_in_sandbox if sandboxed else None)
    except NotARepository as exc:
        raise GitError(f"not a folder, and {skill_dir} is in no git repository ({exc})") from None


def _folder_at(repository: Repository, ref: str) -> str:
    """The id of the tree the skill folder had at `ref`."""
    failure = f"not a folder, and not a git ref of {repository.top}"
    return repository.resolve(ref, kind="tree", failure=failure)


def _objects(repository: Repository) -> contextlib.AbstractContextManager[ObjectReader]:
    return repository.objects(max_tree_entries=settings.EVALSITE_GIT_MAX_TREE_ENTRIES)


def skill_md_at(skill_dir: Path, ref: str) -> bytes:
    """The skill folder's SKILL.md as committed at `ref`; GitError (one line) if there is none."""
    repository = skill_repository(skill_dir)
    tree = _folder_at(repository, ref)
    with _objects(repository) as objects:
        entry = objects.lookup(tree, f"{repository.prefix}/SKILL.md")
        if entry is None or entry.mode not in BLOB_MODES:
            raise GitError(f"no SKILL.md in {skill_dir} at that commit")
        data = objects.read(entry.oid, limit=SKILL_MD_MAX_BYTES)
    if data is None:
        raise GitError(f"its SKILL.md there is larger than {SKILL_MD_MAX_BYTES} bytes")
    return data


def export_skill_at(skill_dir: Path, ref: str, target: Path) -> None:
    """Write the skill folder as committed at `ref` into `target`, which must not exist.

    Regular files only: evals/ and `.git` are left out, and so are symbolic links (120000,
    which the host would follow) and submodules (160000). A name that is not one path
    component is refused; files are created beneath `target` through directory descriptors,
    never following a link. Bounded like an archive: EVALSITE_ARCHIVE_MAX_FILES files,
    EVALSITE_ARCHIVE_MAX_BYTES bytes, EVALSITE_GIT_MAX_TREE_ENTRIES entries walked.
    """
    repository = skill_repository(skill_dir)
    tree = _folder_at(repository, ref)
    with _objects(repository) as objects:
        root = objects.lookup(tree, repository.prefix)
        if root is None or root.mode != TREE_MODE:
            raise GitError(f"{skill_dir} is not a folder at {ref}")
        target.mkdir(parents=True)
        _Export(objects, target).run(root.oid)


class _Export:
    def __init__(self, objects: ObjectReader, target: Path) -> None:
        self.objects = objects
        self.target = target
        self.walked = self.files = self.bytes = 0

    def run(self, tree: str) -> None:
        folders: list[tuple[str, tuple[str, ...]]] = [(tree, ())]
        while folders:
            oid, parts = folders.pop()
            entries = self.objects.tree(oid)
            self.walked += len(entries)
            if self.walked > settings.EVALSITE_GIT_MAX_TREE_ENTRIES:
                raise GitError(
                    f"the skill folder holds more than {settings.EVALSITE_GIT_MAX_TREE_ENTRIES}"
                    " files and folders (limit EVALSITE_GIT_MAX_TREE_ENTRIES)"
                )
            with hostfiles.directory(self.target, PurePosixPath(*parts)) as fd:
                for entry in entries:
                    if not safe_name(entry.name):
                        raise GitError(f"refused: a tree entry named {entry.name!r}")
                    if entry.name == ".git" or (not parts and entry.name == "evals"):
                        continue
                    if entry.mode == TREE_MODE:
                        os.mkdir(entry.name, 0o755, dir_fd=fd)
                        folders.append((entry.oid, (*parts, entry.name)))
                    elif entry.mode in BLOB_MODES:
                        self._write(entry.oid, entry.name, entry.mode, fd)

    def _write(self, oid: str, name: str, mode: str, folder_fd: int) -> None:
        kind, size = self.objects.header(oid)
        if kind != "blob":
            raise GitError(f"object {oid} is a {kind}, not a blob")
        self.files += 1
        self.bytes += size
        if self.files > settings.EVALSITE_ARCHIVE_MAX_FILES:
            raise GitError(
                f"the skill folder holds more than {settings.EVALSITE_ARCHIVE_MAX_FILES} files "
                "(limit EVALSITE_ARCHIVE_MAX_FILES)"
            )
        if self.bytes > settings.EVALSITE_ARCHIVE_MAX_BYTES:
            raise GitError(
                f"the skill folder holds more than {settings.EVALSITE_ARCHIVE_MAX_BYTES} bytes "
                "(limit EVALSITE_ARCHIVE_MAX_BYTES)"
            )
        permissions = 0o755 if mode == "100755" else 0o644
        with os.fdopen(os.open(name, _NEW_FILE, permissions, dir_fd=folder_fd), "wb") as out:
            for chunk in self.objects.chunks(size):
                out.write(chunk)
