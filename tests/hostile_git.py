"""Hostile git repositories: config that runs a program wherever git would honour it.

Every key that names a program names one script, which creates a marker file: a test reads
such a repository through evalsite and asserts the marker never appears. `arm` proves the
trap works first, by letting plain git (which honours the config) spring it once.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: The builder's own git must not read the machine's config (signing, hooks, default branch).
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Eval Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Eval Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
}


def git(repo: Path, *args: str, stdin: str | None = None, check: bool = True) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        env=GIT_ENV,
        input=stdin,
        # Never the test's own stdin: an armed repository's fsmonitor or pager would wait on it.
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        check=check,
    )
    return done.stdout


def commit_all(repo: Path, message: str = "Commit") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def init(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    return repo


def trap(folder: Path, *, name: str = "trap.sh", then: str = "exec cat") -> tuple[Path, Path]:
    """(a script that creates the marker, then acts as `cat`, the marker it creates).

    A remote's program is given `then="exit 1"`: as `cat`, it would echo git's requests
    back and git would wait for an answer forever.
    """
    marker = folder / "MARKER"
    script = folder / name
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\n{then}\n", encoding="utf-8")
    script.chmod(0o755)
    return script, marker


def program_keys(script: Path, remote: Path) -> dict[str, str]:
    """Every config key that runs a program (or reaches a remote that runs one), set to one."""
    hooks = script.parent / "hooks"
    hooks.mkdir(exist_ok=True)
    for hook in ("pre-commit", "post-checkout", "reference-transaction", "post-index-change"):
        (hooks / hook).symlink_to(script)
    return {
        "core.fsmonitor": str(script),
        "core.hooksPath": str(hooks),
        "core.pager": str(script),
        "pager.log": str(script),
        "core.sshCommand": str(script),
        "core.askPass": str(script),
        "core.editor": str(script),
        "core.gitProxy": str(script),
        "core.alternateRefsCommand": str(script),
        "credential.helper": f"!{script}",
        "diff.external": str(script),
        "diff.evil.textconv": str(script),
        "diff.evil.command": str(script),
        "filter.evil.clean": str(script),
        "filter.evil.smudge": str(script),
        "filter.evil.required": "true",
        "gpg.program": str(script),
        "log.showSignature": "true",
        "uploadpack.packObjectsHook": str(script),
        "protocol.allow": "always",
        "protocol.ext.allow": "always",
        "remote.origin.url": f"ext::{remote}",
        "remote.origin.uploadpack": str(remote),
    }


def arm(repo: Path, folder: Path) -> Path:
    """Make `repo` (with at least one commit) hostile; the marker its programs create.

    Its files get the `evil` filter and diff driver, and HEAD a signature. Plain git springs
    the trap (`git add` runs the clean filter, `git log` gpg): checked here once, with the
    `git log` that history imports run, so that a test cannot pass with a dud trap.
    """
    script, marker = trap(folder)
    remote, _ = trap(folder, name="remote.sh", then="exit 1")
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n", encoding="utf-8")
    for key, value in program_keys(script, remote).items():
        git(repo, "config", key, value)
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-q", "-m", "Add attributes")
    _sign_head(repo)
    marker.unlink(missing_ok=True)  # sprung by the clean filter and hooks already
    # With log.showSignature, a signed commit makes any `git log` run gpg.program.
    git(repo, "log", "-1", "--format=%s")
    assert marker.exists(), "the trap did not spring: the test would prove nothing"
    marker.unlink()
    return marker


def _sign_head(repo: Path) -> None:
    """Replace HEAD by the same commit with a (fake) signature, which git checks with gpg."""
    headers, message = git(repo, "cat-file", "commit", "HEAD").split("\n\n", 1)
    signature = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----"
    signed = f"{headers}\n{signature}\n\n{message}"
    commit = git(repo, "hash-object", "-t", "commit", "-w", "--stdin", stdin=signed).strip()
    git(repo, "update-ref", "HEAD", commit)


def make_partial_clone(
    repo: Path, folder: Path, *, key: str = "remote.origin.promisor", lost: str = "SKILL.md"
) -> Path:
    """Make `repo` a partial clone whose promisor remote runs the trap, and lose the blob of
    HEAD:`lost` so that git would fetch it. The marker."""
    script, marker = trap(folder, name="remote.sh", then="exit 1")
    git(repo, "config", "remote.origin.url", f"ext::{script}")
    git(repo, "config", "protocol.ext.allow", "always")
    if key == "extensions.partialClone":
        git(repo, "config", "core.repositoryformatversion", "1")
        git(repo, "config", "extensions.partialClone", "origin")
    else:
        git(repo, "config", "remote.origin.promisor", "true")
    blob = git(repo, "rev-parse", f"HEAD:{lost}").strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    git(repo, "cat-file", "-p", blob, check=False)
    assert marker.exists(), "the promisor remote did not run: the test would prove nothing"
    marker.unlink()
    return marker
