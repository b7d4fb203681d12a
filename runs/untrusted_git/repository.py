"""Finding a folder's repository without running git, and refusing one that reaches out."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .objects import OBJECT_ID, ObjectReader
from .process import ENVIRONMENT, OVERRIDES, GitError, GitStream, Launcher, run_here

#: Objects another repository lends this one: read, they would show that repository's files.
BORROWED = ("objects/info/alternates", "objects/info/http-alternates")
#: A git dir with more entries than this is refused rather than walked (a git dir is mostly
#: packs; even 100,000 loose objects is far more than `git gc --auto` lets pile up).
MAX_GIT_DIR_ENTRIES = 1_000_000
MAX_OUTPUT = 16 * 1024 * 1024
TIMEOUT = 120.0


class NotARepository(GitError):
    """The folder is in no git repository at all."""


@dataclass(frozen=True)
class Repository:
    """A repository checked by `open_repository`; git runs only through these methods."""

    top: Path  # the work tree's top folder
    git_dir: Path
    common_dir: Path  # objects and refs: a linked worktree's main git dir, else git_dir
    prefix: str  # the folder opened, relative to `top` ("" at the top), "/"-separated
    launcher: Launcher = run_here

    def run(
        self, *args: str, failure: str, max_output: int = MAX_OUTPUT, timeout: float = TIMEOUT
    ) -> bytes:
        """What the command prints (at most `max_output` bytes, within `timeout` seconds)."""
        with self.stream(*args, failure=failure, timeout=timeout, total=timeout) as out:
            return out.read_all(limit=max_output)

    @contextlib.contextmanager
    def stream(
        self, *args: str, failure: str, timeout: float = TIMEOUT, total: float | None = None
    ) -> Iterator[GitStream]:
        """A running command, to read (and write to) until it ends; GitError if it fails.

        Each read waits at most `timeout` seconds, all of them `total` when given.
        """
        argv = ["git", "--no-pager", "--bare", *_overrides(), *args]
        # --bare with GIT_DIR: git discovers nothing and uses no work tree (nor core.worktree).
        env = {
            **ENVIRONMENT,
            "PATH": os.environ.get("PATH", os.defpath),
            "GIT_DIR": str(self.git_dir),
            "GIT_COMMON_DIR": str(self.common_dir),  # checked here, not read by git
        }
        # A linked worktree's git dir lies inside its main one; a submodule's is its own.
        reads = [self.common_dir]
        if not self.git_dir.is_relative_to(self.common_dir):
            reads.append(self.git_dir)
        with contextlib.ExitStack() as stack:
            try:
                process = stack.enter_context(self.launcher(argv, env=env, reads=reads))
            except OSError as exc:
                raise GitError(f"could not run git: {exc.strerror or exc}") from None
            out = GitStream(process, failure=failure, timeout=timeout, total=total)
            yield out  # an exception raised by the caller leaves here: git is killed
            out.finish()

    @contextlib.contextmanager
    def objects(self, *, max_tree_entries: int) -> Iterator[ObjectReader]:
        """One `git cat-file --batch` serving objects by id (no filters, no textconv)."""
        with self.stream("cat-file", "--batch", failure="cannot read objects") as out:
            yield ObjectReader(out, max_tree_entries=max_tree_entries)

    def resolve(self, revision: str, *, kind: str = "commit", failure: str) -> str:
        """The id of the `kind` object `revision` names (a ref, `HEAD~2`, an id)."""
        if any(ord(c) < 32 for c in revision):
            raise GitError(f"{failure} (it holds a control character)")
        out = self.run(
            "rev-parse", "--verify", "--end-of-options", f"{revision}^{{{kind}}}", failure=failure
        )
        oid = out.decode("ascii", errors="replace").strip()
        if not OBJECT_ID.fullmatch(oid):
            raise GitError(f"{failure} (git printed {oid[:80]!r}, not an object id)")
        return oid


def _overrides() -> list[str]:
    return [arg for pair in OVERRIDES for arg in ("-c", pair)]


def open_repository(folder: Path, *, launcher: Launcher | None = None) -> Repository:
    """The repository `folder` is in, found as git finds it but without running git.

    Raises NotARepository when there is none, GitError (one line naming the file) when it
    borrows objects or files from elsewhere on this machine, or is a partial clone.
    """
    folder = Path(folder).resolve()
    top, dot_git = _find(folder)
    git_dir = _git_dir(dot_git)
    common_dir = _common_dir(git_dir)
    _check_git_dir(common_dir)
    if not git_dir.is_relative_to(common_dir):  # else walked with it
        _check_git_dir(git_dir)
    prefix = folder.relative_to(top).as_posix()
    repository = Repository(
        top=top,
        git_dir=git_dir,
        common_dir=common_dir,
        prefix="" if prefix == "." else prefix,
        launcher=launcher or run_here,
    )
    _refuse_partial_clone(repository)
    return repository


def _find(folder: Path) -> tuple[Path, Path]:
    """(top folder, its `.git`), honouring GIT_CEILING_DIRECTORIES as git does."""
    listed = os.environ.get("GIT_CEILING_DIRECTORIES", "").split(":")
    ceilings = {Path(p).resolve() for p in listed if os.path.isabs(p)}
    across = os.environ.get("GIT_DISCOVERY_ACROSS_FILESYSTEM", "").lower() in {"1", "true", "yes"}
    try:
        device = folder.stat().st_dev
        here = folder
        while True:
            if os.path.lexists(here / ".git"):
                return here, here / ".git"
            parent = here.parent
            if parent == here or parent in ceilings:
                break
            if not across and parent.stat().st_dev != device:
                break
            here = parent
    except OSError as exc:
        raise GitError(f"cannot look for a repository: {exc.strerror}") from None
    raise NotARepository("no .git here or in a folder above")


def _git_dir(dot_git: Path) -> Path:
    """The git dir `.git` is or names. A `gitdir:` file (a linked worktree, a submodule) is
    followed only to a repository that names this folder back, so a planted one cannot make
    us read some other repository on this machine."""
    mode = os.lstat(dot_git).st_mode
    if stat.S_ISLNK(mode):
        raise GitError(f"refused: {dot_git} is a symbolic link (git never makes one)")
    if stat.S_ISDIR(mode):
        return dot_git
    text = _small_file(dot_git)
    if not text.startswith("gitdir: "):
        raise GitError(f"refused: {dot_git} is a file but not a 'gitdir:' link")
    target = (dot_git.parent / text.removeprefix("gitdir: ").strip()).resolve()
    if _names_back(target, dot_git):
        return target
    raise GitError(
        f"refused: {dot_git} names {target}, a repository that does not name this folder "
        "as its work tree"
    )


def _names_back(target: Path, dot_git: Path) -> bool:
    # `git worktree add` writes the worktree's .git path into <main>/.git/worktrees/<name>/gitdir.
    back = target / "gitdir"
    if target.parent.name == "worktrees" and os.path.isfile(back) and not os.path.islink(back):
        with contextlib.suppress(GitError):
            return Path(_small_file(back).strip()).resolve() == dot_git
    # A submodule's repository is kept in .git/modules/ of the superproject it lies in.
    parts = target.parts
    return any(
        parts[i : i + 2] == (".git", "modules") and dot_git.is_relative_to(Path(*parts[:i]))
        for i in range(1, len(parts) - 1)
    )


def _common_dir(git_dir: Path) -> Path:
    """Where a linked worktree's objects and refs are: only its own main git dir."""
    pointer = git_dir / "commondir"
    if not os.path.lexists(pointer):
        return git_dir
    common = (git_dir / _small_file(pointer).strip()).resolve()
    if git_dir.parent.name == "worktrees" and common == git_dir.parent.parent:
        return common
    raise GitError(f"refused: {pointer} names {common}, which is not this worktree's repository")


def _check_git_dir(root: Path) -> None:
    """Refuse borrowed objects, and anything but plain files and folders in the git dir."""
    for name in BORROWED:
        if os.path.lexists(root / name):
            raise GitError(f"refused: {root / name} borrows objects from another repository")
    seen = 0
    folders = [str(root)]
    try:
        while folders:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if seen > MAX_GIT_DIR_ENTRIES:
                        raise GitError(
                            f"refused: {root} holds more than {MAX_GIT_DIR_ENTRIES} files"
                        )
                    if entry.is_symlink():
                        raise GitError(f"refused: {entry.path} is a symbolic link")
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif not entry.is_file(follow_symlinks=False) and not stat.S_ISSOCK(
                        entry.stat(follow_symlinks=False).st_mode  # fsmonitor's socket
                    ):
                        raise GitError(f"refused: {entry.path} is not a regular file")
    except OSError as exc:
        raise GitError(f"cannot read {exc.filename}: {exc.strerror}") from None


def _small_file(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise GitError(f"refused: {path} is not a regular file")
            return handle.read(4096).decode("utf-8", errors="replace")
    except OSError as exc:
        raise GitError(f"cannot read {path}: {exc.strerror}") from None


def _refuse_partial_clone(repository: Repository) -> None:
    """A promisor remote is where git fetches the objects a partial clone lacks.

    GIT_NO_LAZY_FETCH stops that on git 2.39.4 and later only, and a blob-less clone could
    not give us older versions anyway: refused, whatever the remote.
    """
    out = repository.run("config", "--list", "-z", failure="cannot read its config")
    for item in out.split(b"\0"):
        key, newline, value = item.decode("utf-8", errors="replace").partition("\n")
        promisor = key.startswith("remote.") and key.endswith(".promisor")
        # `-z` prints a key set without a value ("[remote "x"] promisor") without the newline.
        truthy = not newline or value.lower() in {"true", "yes", "on", "1"}
        if key == "extensions.partialclone" or (promisor and truthy):
            raise GitError(
                f"refused: a partial clone ({key}{'=' + value if value else ''} in its config):"
                " git would fetch missing objects from its remote"
            )
