"""git on a repository we do not trust: a skill folder, a clone given to `--history`.

The rule: every git command on such a repository runs through `open_repository` and the
`Repository` it returns, never `subprocess` directly. A repository's own `.git/config` cannot
be switched off and the keys git reads from it are open-ended, so what makes it safe is not a
list of keys but what git is allowed to reach:

- objects come from the repository's own object store only: `open_repository` refuses,
  before git runs, alternates (`objects/info/alternates`, `http-alternates`), a symbolic link
  or anything but plain files and folders anywhere in the git dir (a linked `objects` or
  `HEAD` reads another repository on this machine, a FIFO hangs git), a `.git` link or
  `commondir` that names a repository which does not name this folder back, and a partial
  clone (its promisor remote is where git fetches missing objects from);
- git starts with an environment built from scratch (no system or global config, no lazy
  fetch, no replace objects, no prompts, `GIT_DIR` set to the repository we checked, so
  nothing is discovered behind our back) and command-line overrides, which outrank the
  repository's config, for every key that runs a program or reaches out (`process.py`);
- only plumbing is run, on object ids: `cat-file --batch`, `rev-parse`, `log --name-status`
  — never `show`, `archive` or a checkout, which run textconv and smudge filters;
- output, tree sizes and time are bounded; every failure is one line (`GitError`).

Callers that can (runevals) also pass a launcher that runs git inside the bubblewrap sandbox,
with no network and only the git dir visible, read-only.
"""

from __future__ import annotations

from .objects import BLOB_MODES, ObjectReader, TreeEntry, safe_name
from .process import GitError, GitStream, Launcher, run_here
from .repository import NotARepository, Repository, open_repository

__all__ = [
    "BLOB_MODES",
    "GitError",
    "GitStream",
    "Launcher",
    "NotARepository",
    "ObjectReader",
    "Repository",
    "TreeEntry",
    "open_repository",
    "run_here",
    "safe_name",
]
