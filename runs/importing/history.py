"""`importworkspace --history`: the promoted campaigns in a git clone's log, as iterations.

eval-magic keeps one promoted baseline per skill and replaces it on each promotion, so a
skill's real history is its git log. For every result folder in the history of HEAD under the
given path (a skill's `evals/baseline/`, a committed `iteration-*/` or folder holding
`conditions.json`, which covers skill-creator's `<skill>-workspace/iteration-*/` too), each
commit that changed it is read for the identity of the campaign it then held: the identity
the importer gives the iteration (`<label>@<timestamp>`: BASELINE.md's Iteration and Run
timestamp, conditions.json's timestamp, or benchmark.json's `metadata.timestamp`). Each
identity becomes one iteration, imported as of the *last* commit that held it: a later commit
that only edits its notes or evidence updates that iteration, and running again finds the same
versions, so it adds nothing. The commit it was promoted in and the one it was last edited in
are kept under `provenance["git"]`.

Objects are read, never checked out: one `git log` lists the commits and the paths they
changed, and one `git cat-file --batch` serves every tree and blob. Each chosen version is
written to a temporary folder in the repository's own layout, with the SKILL.md and
evals.json *of that commit* beside it, and all of them are imported by `import_roots` in one
transaction, so each iteration links to the definitions that were committed with it.
History means HEAD's ancestors (git's default history simplification, oldest first in
topological order); merges are read against their first parent. Needs git 2.31 or later.
A clone is as untrusted as an uploaded archive: what is written is held to the archive
limits, and a path git itself would reject (`..`, empty components) refuses the import.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from . import jsonfiles
from .baseline import _unset, parse_provenance
from .definitions import parse_skill_md
from .detect import HIDDEN_SEARCHED, RESULT_FILES, is_snapshot, natural_key
from .errors import ImportFailure
from .tree import SKIPPED_DIR_PREFIXES, SKIPPED_DIRS, SKIPPED_FILES, is_skipped_dir
from .workspace import ImportRoot, Progress, import_roots
from .writer import ImportReport

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
STATUS = re.compile(rb"^\n?[ACDMRTUX]\d*$")
#: Identity files are small; one larger than the importer reads is no identity at all.
MAX_IDENTITY_BYTES = 8 * 1024 * 1024
CHUNK = 1 << 20
#: Regular files; "100664" is what very old gits wrote for them.
BLOB_MODES = {"100644", "100755", "100664"}
#: A `.git` file is a link to some repository's internals, never a result.
NOT_WRITTEN = SKIPPED_FILES | {".git"}


@dataclass(frozen=True)
class Commit:
    sha: str
    tree: str
    date: str  # committer date, strict ISO 8601
    subject: str


@dataclass
class Campaign:
    """One identity of a result folder: the commit it was promoted in and its latest edit."""

    folder: str  # repository-relative, of the latest version
    first: Commit
    last: Commit
    order: int  # position of `first` in the log, so roots are imported in commit order


@dataclass(frozen=True)
class _Entry:
    name: str
    mode: str
    oid: str


@dataclass(frozen=True)
class _Repository:
    given: str
    top: Path
    #: The repository-relative folder imported: the given path, or the result folder it is in.
    prefix: str
    widened: bool = False


def import_history(
    paths: list[Path | str],
    *,
    dry_run: bool = False,
    keep_going: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import every campaign in the git history of each path (a clone or a folder in one).

    One transaction for all paths, like `import_workspace` (one per iteration with
    `keep_going`). Raises ImportFailure when a path is not in a git clone or its history holds
    no results.
    """
    if shutil.which("git") is None:
        raise ImportFailure("--history needs the git command, which is not on PATH")
    temp = Path(tempfile.mkdtemp(prefix="evalsite-history-"))
    try:
        roots: list[ImportRoot] = []
        seen: set[tuple[Path, tuple[str, ...]]] = set()
        for index, given in enumerate(paths):
            repo = _repository(Path(given))
            with _Objects(repo) as objects:
                campaigns = _campaigns(repo, objects)
                if not campaigns:
                    raise ImportFailure(
                        "no promoted baseline, eval-magic iteration or skill-creator workspace "
                        "in the git history here",
                        path=repo.given,
                    )
                for number, (key, campaign) in enumerate(campaigns.items()):
                    if (repo.top, key) in seen:
                        continue  # two paths into the same clone: import each campaign once
                    seen.add((repo.top, key))
                    into = temp / f"{index}-{number}" / repo.top.name
                    roots.append(_materialise(repo, objects, campaign, into))
        return import_roots(roots, dry_run=dry_run, keep_going=keep_going, progress=progress)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in REPOSITORY_VARIABLES}
    # A partial clone would fetch missing blobs from its remote; reading history stays local.
    env.update(GIT_NO_LAZY_FETCH="1", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    return env


def _git(folder: Path, *args: str, failure: str) -> bytes:
    try:
        done = subprocess.run(
            ["git", *GIT_OPTIONS, "-C", str(folder), *args],
            env=_environment(),
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


def _repository(path: Path) -> _Repository:
    given = str(path).rstrip("/") or "/"
    if not path.exists():
        raise ImportFailure("no such file or folder", path=given)
    if not path.is_dir():
        raise ImportFailure("--history takes a folder in a git clone, not a file", path=given)
    try:
        out = _git(
            path, "rev-parse", "--show-toplevel", "--show-prefix", failure="not in a git clone"
        )
        _git(path, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", failure="no commits yet")
    except ImportFailure as exc:
        raise ImportFailure(exc.message, path=given) from None
    # One path per line; only the final newline of each is git's.
    top, prefix = os.fsdecode(out).removesuffix("\n").split("\n", 1)
    parts = [p for p in prefix.split("/") if p]
    # Pointed inside a result folder: that folder is what the user means.
    for i in range(len(parts) - 1):
        if _names_result_folder(parts, i):
            return _Repository(given, Path(top), "/".join(parts[: i + 1]), widened=True)
    return _Repository(given, Path(top), "/".join(parts))


def _names_result_folder(parts: list[str], i: int) -> bool:
    name = parts[i]
    return name.startswith("iteration-") or (
        name == "baseline" and i > 0 and parts[i - 1] == "evals"
    )


def _entered(name: str) -> bool:
    """Whether detection reads a folder of this name (tool state and snapshots it skips)."""
    if name in HIDDEN_SEARCHED:
        return True
    hidden = name.startswith(".") or name in SKIPPED_DIRS
    return not (hidden or name.startswith(SKIPPED_DIR_PREFIXES) or is_snapshot(name))


def _safe(name: str) -> bool:
    # git fsck refuses these, but nothing makes a clone run fsck on what it fetched.
    return name not in {"", ".", ".."} and "/" not in name and "\0" not in name


def _log(repo: _Repository) -> list[tuple[Commit, list[str]]]:
    """(commit, paths it changed) for every commit touching the prefix, oldest first."""
    out = _git(
        repo.top,
        "log",
        "--reverse",
        "--topo-order",
        "--no-renames",
        "--diff-merges=first-parent",
        "--no-ext-diff",
        "--name-status",
        "-z",
        "--format=%H%x00%T%x00%cI%x00%s",
        "HEAD",
        "--",
        repo.prefix or ".",
        failure="cannot read the history",
    )
    # -z: NUL after every field; a commit's changes follow as (status, path) pairs.
    tokens = out.split(b"\0")
    if tokens and tokens[-1] == b"":
        tokens.pop()
    history: list[tuple[Commit, list[str]]] = []
    i = 0
    while i + 3 < len(tokens):
        sha, tree, date, subject = tokens[i : i + 4]
        commit = Commit(
            sha.decode(), tree.decode(), date.decode(), subject.decode("utf-8", errors="replace")
        )
        i += 4
        changed = []
        while i + 1 < len(tokens) and STATUS.match(tokens[i]):
            path = os.fsdecode(tokens[i + 1])
            if not all(_safe(part) for part in path.split("/")):
                raise ImportFailure(
                    f"refused: commit {commit.sha[:7]} has a path {path!r}, "
                    "which git itself rejects",
                    path=repo.given,
                )
            changed.append(path)
            i += 2
        history.append((commit, changed))
    return history


def _result_folder(path: str, prefix_depth: int, known: set[str]) -> str | None:
    """The outermost result folder `path` lies in, or None."""
    parts = path.split("/")
    for i in range(len(parts) - 1):
        if i >= prefix_depth and not _entered(parts[i]):
            return None
        folder = "/".join(parts[: i + 1])
        if _names_result_folder(parts, i) or folder in known:
            return folder
    return None


def _campaigns(repo: _Repository, objects: _Objects) -> dict[tuple[str, ...], Campaign]:
    """Each identity found in the history, with its first and last commit, in commit order."""
    history = _log(repo)
    if history:  # a SHA-256 repository's trees hold 32-byte ids
        objects.oid_bytes = len(history[0][0].sha) // 2
    depth = len(repo.prefix.split("/")) if repo.prefix else 0
    # Folders that ever held conditions.json are iterations whatever their name.
    known = {
        path.rsplit("/", 1)[0]
        for _, changed in history
        for path in changed
        if path.endswith("/conditions.json")
    }
    campaigns: dict[tuple[str, ...], Campaign] = {}
    for order, (commit, changed) in enumerate(history):
        folders = {_result_folder(path, depth, known) for path in changed}
        for folder in sorted((f for f in folders if f is not None), key=natural_key):
            key = _identity(objects, commit, folder)
            if key is None:
                continue
            if key in campaigns:
                campaigns[key].last = commit
                campaigns[key].folder = folder
            else:
                campaigns[key] = Campaign(folder, commit, commit, order)
    return dict(sorted(campaigns.items(), key=lambda item: item[1].order))


def _identity(objects: _Objects, commit: Commit, folder: str) -> tuple[str, ...] | None:
    """(kind, skill, source key) of what `folder` held at `commit`; None if no results.

    The source key follows the readers (baseline.py, eval_magic.py, skill_creator.py) so a
    campaign here is exactly one iteration there. The skill is the SKILL.md name of the
    folder the results belong to, else that folder's name: enough to tell two skills'
    campaigns apart, and a skill folder that moved keeps its campaigns.
    """
    entry = objects.lookup(commit.tree, folder)
    if entry is None or entry.mode != "40000":
        return None  # deleted in this commit
    files = dict(objects.files(entry.oid, display=f"{commit.sha[:7]}:{folder}"))
    parts = folder.split("/")
    is_baseline = len(parts) > 1 and parts[-2:] == ["evals", "baseline"]
    holds = any(path.rsplit("/", 1)[-1] in RESULT_FILES for path in files)
    if not holds and not (is_baseline and any(p.startswith("grading/") for p in files)):
        return None
    owner = "/".join(parts[:-2] if is_baseline else parts[:-1])
    if owner.endswith("-workspace"):
        owner = owner.removesuffix("-workspace")
    skill = _skill_name(objects, commit, owner)
    if "conditions.json" in files:
        conditions = _json(objects, files["conditions.json"])
        return "eval-magic", skill, f"{parts[-1]}@{conditions.get('timestamp') or ''}"
    benchmark = _json(objects, files["benchmark.json"]) if "benchmark.json" in files else {}
    if is_baseline:
        provenance: dict[str, str] = {}
        if "BASELINE.md" in files:
            text = _text(objects, files["BASELINE.md"])
            provenance = parse_provenance(text) if text is not None else {}
        label = _unset(provenance.get("Iteration")) or "baseline"
        timestamp = _unset(provenance.get("Run timestamp")) or benchmark.get("generated", "")
        return "baseline", skill, f"{label}@{timestamp}"
    metadata = benchmark.get("metadata")
    timestamp = (metadata.get("timestamp") if isinstance(metadata, dict) else None) or ""
    return "skill-creator", skill, f"{parts[-1]}@{timestamp}"


def _skill_name(objects: _Objects, commit: Commit, owner: str) -> str:
    entry = objects.lookup(commit.tree, f"{owner}/SKILL.md" if owner else "SKILL.md")
    text = _text(objects, entry.oid) if entry is not None and entry.mode != "40000" else None
    if text is not None:
        try:
            name, _ = parse_skill_md(text, display="SKILL.md")
        except ImportFailure:
            name = None  # the import itself names the bad front matter
        if name:
            return name
    return owner.rsplit("/", 1)[-1]


def _text(objects: _Objects, oid: str) -> str | None:
    raw = objects.read(oid, limit=MAX_IDENTITY_BYTES)
    try:
        return jsonfiles.read_text(raw, display="") if raw is not None else None
    except ImportFailure:
        return None


def _json(objects: _Objects, oid: str) -> dict[str, Any]:
    """A JSON object, or {} for anything else: the import names what is wrong with it."""
    raw = objects.read(oid, limit=MAX_IDENTITY_BYTES)
    try:
        data = jsonfiles.parse_json(raw, display="") if raw is not None else None
    except ImportFailure:
        return {}
    return data if isinstance(data, dict) else {}


def _context_paths(folder: str) -> list[str]:
    """The definition files detection and linking look for around a result folder: SKILL.md
    and evals.json in each enclosing folder, and in `<x>/` beside a `<x>-workspace/`."""
    parts = folder.split("/")
    found: list[str] = []
    for depth in range(len(parts) - 1, -1, -1):
        here = parts[:depth]
        owners = [here]
        if here and here[-1].endswith("-workspace"):
            owners.append([*here[:-1], here[-1].removesuffix("-workspace")])
        for owner in owners:
            for name in ("SKILL.md", "evals.json", "evals/evals.json"):
                found.append("/".join([*owner, name]))
    return list(dict.fromkeys(found))


def _materialise(
    repo: _Repository, objects: _Objects, campaign: Campaign, into: Path
) -> ImportRoot:
    """Write the campaign's latest version, with its commit's definitions, below `into`."""
    commit = campaign.last
    entry = objects.lookup(commit.tree, campaign.folder)
    assert entry is not None  # _identity found it at this very commit
    for relpath, oid in objects.files(entry.oid, display=f"{commit.sha[:7]}:{campaign.folder}"):
        objects.write(oid, into / campaign.folder / relpath)
    for path in _context_paths(campaign.folder):
        found = objects.lookup(commit.tree, path)
        if found is not None and found.mode in BLOB_MODES:
            objects.write(found.oid, into / path)
    short = commit.sha[:7]
    display = f"{repo.given}@{short}"
    if repo.widened:
        display = f"{repo.top}/{repo.prefix}@{short}"
    return ImportRoot(
        path=into / repo.prefix if repo.prefix else into,
        display=display,
        provenance={
            "git": {
                "commit": commit.sha,
                "date": commit.date,
                "subject": commit.subject,
                "first_commit": campaign.first.sha,
                "first_date": campaign.first.date,
                "first_subject": campaign.first.subject,
                "repository": str(repo.top),
                "path": campaign.folder.encode("utf-8", "surrogateescape").decode(
                    "utf-8", "replace"
                ),
            }
        },
        generated_at=datetime.fromisoformat(campaign.first.date),
    )


class _Objects:
    """One `git cat-file --batch` serving every tree and blob of a history import.

    Objects are asked for by id only, so no path (spaces, newlines, colons) is ever parsed
    by git; trees are cached because consecutive commits share most of them. What it writes
    is held to the archive limits, as a clone is as untrusted as an uploaded archive.
    """

    def __init__(self, repo: _Repository) -> None:
        self.repo = repo
        self.top = repo.top
        self.oid_bytes = 20
        self.written = self.files_written = 0
        self.trees: dict[str, list[_Entry]] = {}
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> _Objects:
        try:
            self.process = subprocess.Popen(
                ["git", *GIT_OPTIONS, "-C", str(self.top), "cat-file", "--batch"],
                env=_environment(),
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

    def tree(self, oid: str) -> list[_Entry]:
        if oid not in self.trees:
            self.trees[oid] = self._parse_tree(oid, self.read(oid, kind="tree") or b"")
        return self.trees[oid]

    def _parse_tree(self, oid: str, data: bytes) -> list[_Entry]:
        entries, pos = [], 0
        try:
            while pos < len(data):
                space = data.index(b" ", pos)
                nul = data.index(b"\0", space)
                end = nul + 1 + self.oid_bytes
                name = os.fsdecode(data[space + 1 : nul])
                entries.append(_Entry(name, data[pos:space].decode(), data[nul + 1 : end].hex()))
                pos = end
        except ValueError:
            raise ImportFailure(f"tree {oid} is corrupt", path=str(self.top)) from None
        return entries

    def lookup(self, tree: str, path: str) -> _Entry | None:
        """The entry at `path` below `tree`, or None."""
        found: _Entry | None = _Entry("", "40000", tree)
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
                if not _safe(entry.name):
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
                path=self.repo.given,
            )
        if self.written > settings.EVALSITE_ARCHIVE_MAX_BYTES:
            raise ImportFailure(
                f"its history holds more than {settings.EVALSITE_ARCHIVE_MAX_BYTES} bytes of "
                "results (limit EVALSITE_ARCHIVE_MAX_BYTES)",
                path=self.repo.given,
            )
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "wb") as out:
            for chunk in self._chunks(size):
                out.write(chunk)


__all__ = ["Campaign", "Commit", "import_history"]
