"""`importworkspace --history`: the promoted campaigns in a git clone's log, as iterations.

eval-magic replaces a skill's promoted baseline on each promotion, so its real history is the
git log. Each result folder in HEAD's history under the path (`evals/baseline/`, a committed
`iteration-*/` or `conditions.json` folder) is read at every commit that changed it; each
campaign identity it held (`<label>@<timestamp>`) becomes one iteration, imported as of the
last commit that held it, with the SKILL.md and evals.json of that commit, all in one
transaction; the commits are kept under `provenance["git"]`. Running again adds nothing.

Objects are read through runs.untrusted_git (plumbing only, never a checkout; the clone is as
untrusted as an uploaded archive), bounded by EVALSITE_GIT_MAX_TREE_ENTRIES and the archive
limits. Needs git 2.31 or later.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from runs.untrusted_git import (
    BLOB_MODES,
    GitError,
    NotARepository,
    Repository,
    open_repository,
    safe_name,
)

from . import jsonfiles
from .baseline import campaign_identity, parse_provenance
from .definitions import parse_skill_md
from .detect import HIDDEN_SEARCHED, RESULT_FILES, is_snapshot, natural_key
from .errors import ImportFailure
from .gitobjects import GitObjects, git_failures
from .report import ImportReport
from .roots import ImportRoot
from .tree import SKIPPED_DIR_PREFIXES, SKIPPED_DIRS
from .workspace import Progress, import_roots

STATUS = re.compile(rb"^\n?[ACDMRTUX]\d*$")
#: Longer than any path or commit subject a real history holds.
MAX_LOG_FIELD = 1024 * 1024
#: Identity files are small; one larger than the importer reads is no identity at all.
MAX_IDENTITY_BYTES = 8 * 1024 * 1024


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
class _Repository:
    given: str
    top: Path
    #: The repository-relative folder imported: the given path, or the result folder it is in.
    prefix: str
    git: Repository
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
            limit = settings.EVALSITE_GIT_MAX_TREE_ENTRIES
            with git_failures(repo.given), repo.git.objects(max_tree_entries=limit) as reader:
                objects = GitObjects(reader, given=repo.given)
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


def _repository(path: Path) -> _Repository:
    given = str(path).rstrip("/") or "/"
    if not path.exists():
        raise ImportFailure("no such file or folder", path=given)
    if not path.is_dir():
        raise ImportFailure("--history takes a folder in a git clone, not a file", path=given)
    try:
        git = open_repository(path)
        git.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}", failure="no commits yet")
    except NotARepository as exc:
        raise ImportFailure(f"not in a git clone ({exc.message})", path=given) from None
    except GitError as exc:
        raise ImportFailure(exc.message, path=given) from None
    parts = [p for p in git.prefix.split("/") if p]
    # Pointed inside a result folder: that folder is what the user means.
    for i in range(len(parts) - 1):
        if _names_result_folder(parts, i):
            return _Repository(given, git.top, "/".join(parts[: i + 1]), git, widened=True)
    return _Repository(given, git.top, "/".join(parts), git)


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


def _log(repo: _Repository) -> tuple[list[tuple[Commit, set[str]]], set[str]]:
    """(commit, folders it changed files in) for every commit touching the prefix, oldest
    first; and the folders that ever held a conditions.json.

    Read as git prints it and kept as folders, not paths: a result folder is found from the
    folders a path lies in, and a commit adding a million files to one folder is one entry.
    """
    limit = settings.EVALSITE_GIT_MAX_TREE_ENTRIES
    history: list[tuple[Commit, set[str]]] = []
    known: set[str] = set()
    held = 0
    with (
        git_failures(repo.given),
        repo.git.stream(
            "log",
            "--reverse",
            "--topo-order",
            "--no-renames",
            "--diff-merges=first-parent",
            "--no-ext-diff",
            "--no-textconv",
            "--name-status",
            "-z",
            "--format=%H%x00%T%x00%cI%x00%s",
            "HEAD",
            "--",
            repo.prefix or ".",
            failure="cannot read the history",
        ) as out,
    ):
        # -z: NUL after every field; a commit's changes follow as (status, path) pairs.
        def field() -> bytes:
            token = out.read_until(b"\0", limit=MAX_LOG_FIELD)
            if token is None:
                raise out.ended("git log's output ended mid-commit")
            return token

        token = out.read_until(b"\0", limit=MAX_LOG_FIELD)
        while token is not None:
            tree, date, subject = field(), field(), field()
            commit = Commit(
                token.decode(), tree.decode(), date.decode(), subject.decode("utf-8", "replace")
            )
            folders: set[str] = set()
            while (
                token := out.read_until(b"\0", limit=MAX_LOG_FIELD)
            ) is not None and STATUS.match(token):
                path = os.fsdecode(field())
                if not all(safe_name(part) for part in path.split("/")):
                    raise ImportFailure(
                        f"refused: commit {commit.sha[:7]} has a path {path!r}, "
                        "which git itself rejects",
                        path=repo.given,
                    )
                folder, _, name = path.rpartition("/")
                folders.add(folder)
                if folder and name == "conditions.json":
                    known.add(folder)
            held += len(folders)
            if held > limit:
                raise ImportFailure(
                    f"its history changes files in more than {limit} folders "
                    "(limit EVALSITE_GIT_MAX_TREE_ENTRIES)",
                    path=repo.given,
                )
            history.append((commit, folders))
    return history, known


def _result_folder(folder: str, prefix_depth: int, known: set[str]) -> str | None:
    """The outermost result folder that `folder` is or lies in, or None."""
    parts = folder.split("/") if folder else []
    for i in range(len(parts)):
        if i >= prefix_depth and not _entered(parts[i]):
            return None
        here = "/".join(parts[: i + 1])
        if _names_result_folder(parts, i) or here in known:
            return here
    return None


def _campaigns(repo: _Repository, objects: GitObjects) -> dict[tuple[str, ...], Campaign]:
    """Each identity found in the history, with its first and last commit, in commit order."""
    history, known = _log(repo)
    depth = len(repo.prefix.split("/")) if repo.prefix else 0
    campaigns: dict[tuple[str, ...], Campaign] = {}
    for order, (commit, changed) in enumerate(history):
        folders = {_result_folder(folder, depth, known) for folder in changed}
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


def _identity(objects: GitObjects, commit: Commit, folder: str) -> tuple[str, ...] | None:
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
        label, timestamp = campaign_identity(provenance, benchmark)
        return "baseline", skill, f"{label}@{timestamp}"
    metadata = benchmark.get("metadata")
    timestamp = (metadata.get("timestamp") if isinstance(metadata, dict) else None) or ""
    return "skill-creator", skill, f"{parts[-1]}@{timestamp}"


def _skill_name(objects: GitObjects, commit: Commit, owner: str) -> str:
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


def _text(objects: GitObjects, oid: str) -> str | None:
    raw = objects.read(oid, limit=MAX_IDENTITY_BYTES)
    try:
        return jsonfiles.read_text(raw, display="") if raw is not None else None
    except ImportFailure:
        return None


def _json(objects: GitObjects, oid: str) -> dict[str, Any]:
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
    repo: _Repository, objects: GitObjects, campaign: Campaign, into: Path
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


__all__ = ["Campaign", "Commit", "import_history"]
