"""Revision mode's git baseline on a hostile skill repository: `runevals --baseline <ref>`
reads the old SKILL.md and stages the old skill folder without running anything the
repository's config names, and refuses in one line what reaches outside it."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from grading import sandbox
from grading.evaluating.claude_code import stage_skill
from grading.evaluating.harness import AgentResult, AgentSettings, Dispatch
from grading.evaluating.plan import baseline_skill
from runs.untrusted_git import GitError
from tests.factories import WRITE_NOTES_EVAL, write_json
from tests.hostile_git import arm, commit_all, git, init, make_partial_clone

pytestmark = pytest.mark.django_db

OLD = "---\nname: demo\ndescription: Version one.\n---\nOld body.\n"
NEW = "---\nname: demo\ndescription: Version two.\n---\nNew body.\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init(tmp_path / "skills")


@pytest.fixture
def skill(repo: Path) -> Path:
    """skills/demo, committed as version one, then edited on disk to version two."""
    skill = repo / "demo"
    (skill / "evals" / "fixtures").mkdir(parents=True)
    (skill / "SKILL.md").write_text(OLD, encoding="utf-8")
    (skill / "evals" / "fixtures" / "README.md").write_text("# Project\n", encoding="utf-8")
    write_json(skill / "evals" / "evals.json", {"skill_name": "demo", "evals": [WRITE_NOTES_EVAL]})
    (skill / "scripts").mkdir()
    (skill / "scripts" / "check.sh").write_text("#!/bin/sh\necho checked\n", encoding="utf-8")
    (skill / "scripts" / "check.sh").chmod(0o755)
    commit_all(repo, "Version one")
    (skill / "SKILL.md").write_text(NEW, encoding="utf-8")
    return skill


@pytest.fixture
def workspace(tmp_path: Path, settings) -> Path:
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    return settings.EVALSITE_WORKSPACE_DIR


def dry_run(skill: Path, baseline: str = "HEAD") -> str:
    out = io.StringIO()
    call_command(
        "runevals",
        "--harness",
        "messages",
        str(skill),
        "--mode",
        "revision",
        "--baseline",
        baseline,
        "--dry-run",
        stdout=out,
    )
    return out.getvalue()


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandboxed", "unsandboxed"])
def test_a_dry_run_on_a_hostile_repository_runs_none_of_its_programs(
    repo: Path, skill: Path, workspace: Path, tmp_path: Path, sandboxed: bool
) -> None:
    if sandboxed and sandbox.sandbox_problem():
        pytest.skip(sandbox.sandbox_problem())
    marker = arm(repo, tmp_path)

    with sandbox.unsandboxed(not sandboxed):
        output = dry_run(skill)
        old, label = baseline_skill(skill, "HEAD")

    assert "demo: revision, 1 evals × 2 conditions (old_skill, new_skill)" in output
    assert (old.description, old.body, label) == ("Version one.", "Old body.\n", "HEAD")
    assert not marker.exists()


def test_a_partial_clone_baseline_is_refused_in_one_line_and_its_remote_never_runs(
    repo: Path, skill: Path, workspace: Path, tmp_path: Path
) -> None:
    marker = make_partial_clone(repo, tmp_path, lost="demo/SKILL.md")

    with pytest.raises(CommandError) as raised:
        dry_run(skill)

    assert raised.value.returncode == 2
    assert str(raised.value) == (
        "--baseline HEAD: refused: a partial clone (remote.origin.promisor=true in its config):"
        " git would fetch missing objects from its remote"
    )
    assert not marker.exists()


def test_alternates_in_the_skill_repository_are_refused_in_one_line_naming_the_file(
    repo: Path, skill: Path, workspace: Path, tmp_path: Path
) -> None:
    other = init(tmp_path / "other")
    (other / "SKILL.md").write_text(OLD, encoding="utf-8")
    commit_all(other, "Someone else's")
    alternates = repo / ".git" / "objects" / "info" / "alternates"
    alternates.parent.mkdir(exist_ok=True)
    alternates.write_text(f"{other / '.git' / 'objects'}\n", encoding="utf-8")

    with pytest.raises(CommandError) as raised:
        dry_run(skill)

    assert str(raised.value) == (
        f"--baseline HEAD: refused: {alternates} borrows objects from another repository"
    )


def test_a_bad_ref_is_still_one_line(skill: Path, workspace: Path) -> None:
    with pytest.raises(CommandError) as raised:
        dry_run(skill, "no-such-ref")

    assert str(raised.value) == (
        f"--baseline no-such-ref: not a folder, and not a git ref of {skill.parent} "
        "(git: Needed a single revision)"
    )


def dispatch_with_baseline(skill: Path, env: Path) -> Dispatch:
    old, _ = baseline_skill(skill, "HEAD")
    env.mkdir()
    return Dispatch(
        case={"prompt": "What is 2+2?"},
        env=env,
        skill=old,
        skill_dir=skill,
        agent=AgentSettings(model="claude-haiku-4-5"),
        client=None,
        result=AgentResult(),
    )


def test_the_staged_git_baseline_is_its_regular_files_and_runs_no_filter(
    repo: Path, skill: Path, tmp_path: Path
) -> None:
    (skill / "SKILL.md").write_text(OLD, encoding="utf-8")
    (skill / ".gitattributes").write_text("* filter=evil\n", encoding="utf-8")  # archive reads
    os.symlink("/etc/passwd", skill / "passwd")
    commit_all(repo, "A link")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},demo/vendored")
    git(repo, "commit", "-q", "-m", "A submodule")
    marker = arm(repo, tmp_path)
    git(repo, "archive", "--format=tar", "-o", str(tmp_path / "old.tar"), "HEAD:demo")
    assert marker.exists()  # the smudge filter: what exporting with `git archive` ran
    marker.unlink()

    staged = stage_skill(dispatch_with_baseline(skill, tmp_path / "env"))

    assert staged is not None
    files = sorted(p.relative_to(staged).as_posix() for p in staged.rglob("*"))
    # No link, submodule or evals/.
    assert files == [".gitattributes", "SKILL.md", "scripts", "scripts/check.sh"]
    assert (staged / "SKILL.md").read_text(encoding="utf-8") == OLD
    assert (staged / "scripts" / "check.sh").stat().st_mode & stat.S_IXUSR
    assert not marker.exists()


def test_a_tree_entry_that_would_escape_the_staged_folder_is_refused(
    repo: Path, skill: Path, tmp_path: Path
) -> None:
    # git fsck refuses a ".." entry, but nothing makes a clone run fsck: one built by hand.
    blob = git(repo, "hash-object", "-w", "--stdin", stdin="escaped\n").strip()
    inner = git(repo, "ls-tree", "HEAD:demo") + f"100644 blob {blob}\t..\n"
    demo = git(repo, "mktree", stdin=inner).strip()
    root = git(repo, "mktree", stdin=f"040000 tree {demo}\tdemo\n").strip()
    crafted = git(repo, "commit-tree", root, "-p", "HEAD", "-m", "Craft").strip()
    git(repo, "update-ref", "HEAD", crafted)
    dispatch = dispatch_with_baseline(skill, tmp_path / "env")

    with pytest.raises(GitError) as raised:
        stage_skill(dispatch)

    assert raised.value.message == "refused: a tree entry named '..'"
