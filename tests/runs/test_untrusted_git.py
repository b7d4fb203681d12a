"""runs.untrusted_git: git on a repository we do not trust runs none of its programs and
reads nothing but its own objects, within bounds, failing in one line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from runs.untrusted_git import GitError, GitStream, NotARepository, open_repository
from tests.hostile_git import arm, commit_all, git, init, make_partial_clone


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = init(tmp_path / "repo")
    (repo / "skill").mkdir()
    (repo / "skill" / "SKILL.md").write_text("---\nname: demo\n---\nBody.\n", encoding="utf-8")
    commit_all(repo, "First")
    return repo


def other_repository(tmp_path: Path) -> Path:
    """Someone else's repository on the same machine."""
    other = init(tmp_path / "other")
    (other / "secret.txt").write_text("not yours\n", encoding="utf-8")
    commit_all(other, "Elsewhere")
    return other


def read_skill_md(folder: Path) -> bytes | None:
    """What evalsite's callers do: a ref to a tree, then the blob by id."""
    repository = open_repository(folder)
    tree = repository.resolve("HEAD", kind="tree", failure="no HEAD")
    with repository.objects(max_tree_entries=1000) as objects:
        entry = objects.lookup(tree, "skill/SKILL.md")
        assert entry is not None
        return objects.read(entry.oid)


def test_a_hostile_config_runs_none_of_its_programs(repo: Path, tmp_path: Path) -> None:
    marker = arm(repo, tmp_path)

    body = read_skill_md(repo / "skill")
    log = open_repository(repo).run(
        "log", "--no-ext-diff", "--no-textconv", "--name-status", "-z", "HEAD", failure="log"
    )

    assert body == b"---\nname: demo\n---\nBody.\n"
    assert b"skill/SKILL.md" in log
    assert not marker.exists()


@pytest.mark.parametrize("key", ["remote.origin.promisor", "extensions.partialClone"])
def test_a_partial_clone_is_refused_and_its_promisor_remote_never_runs(
    repo: Path, tmp_path: Path, key: str
) -> None:
    marker = make_partial_clone(repo, tmp_path, key=key, lost="skill/SKILL.md")

    with pytest.raises(GitError) as raised:
        read_skill_md(repo)

    shown = "extensions.partialclone=origin" if key.startswith("ext") else f"{key}=true"
    assert raised.value.message == (
        f"refused: a partial clone ({shown} in its config): "
        "git would fetch missing objects from its remote"
    )
    assert not marker.exists()


@pytest.mark.parametrize("name", ["alternates", "http-alternates"])
def test_borrowed_objects_are_refused_with_one_line_naming_the_file(
    repo: Path, tmp_path: Path, name: str
) -> None:
    other = other_repository(tmp_path)
    borrowed = repo / ".git" / "objects" / "info" / name
    borrowed.parent.mkdir(exist_ok=True)
    borrowed.write_text(f"{other / '.git' / 'objects'}\n", encoding="utf-8")

    with pytest.raises(GitError) as raised:
        open_repository(repo)

    assert raised.value.message == f"refused: {borrowed} borrows objects from another repository"


def test_a_link_in_the_git_dir_is_refused_before_git_reads_through_it(
    repo: Path, tmp_path: Path
) -> None:
    other = other_repository(tmp_path)
    ref = repo / ".git" / "refs" / "heads" / "stolen"
    ref.symlink_to(other / ".git" / "refs" / "heads" / "main")

    with pytest.raises(GitError) as raised:
        open_repository(repo)

    assert raised.value.message == f"refused: {ref} is a symbolic link"


def test_a_fifo_in_the_git_dir_is_refused_rather_than_hanging_git(repo: Path) -> None:
    fifo = repo / ".git" / "packed-refs"
    os.mkfifo(fifo)

    with pytest.raises(GitError) as raised:
        open_repository(repo)

    assert raised.value.message == f"refused: {fifo} is not a regular file"


def test_a_dot_git_naming_another_repository_is_refused(repo: Path, tmp_path: Path) -> None:
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / ".git").write_text(f"gitdir: {repo / '.git'}\n", encoding="utf-8")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".git").symlink_to(repo / ".git")

    with pytest.raises(GitError) as named:
        open_repository(planted)
    with pytest.raises(GitError) as link:
        open_repository(linked)

    assert named.value.message == (
        f"refused: {planted / '.git'} names {repo / '.git'}, a repository that does not name "
        "this folder as its work tree"
    )
    assert (
        link.value.message == f"refused: {linked / '.git'} is a symbolic link (git never makes one)"
    )


def test_a_linked_worktree_and_a_submodule_are_read(repo: Path, tmp_path: Path) -> None:
    worktree = tmp_path / "worktree"
    git(repo, "worktree", "add", "-q", "-b", "other", str(worktree))
    outer = init(tmp_path / "outer")
    git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(repo), "sub")
    commit_all(outer, "Add the submodule")

    assert read_skill_md(worktree / "skill") == b"---\nname: demo\n---\nBody.\n"
    assert read_skill_md(outer / "sub" / "skill") == b"---\nname: demo\n---\nBody.\n"
    assert open_repository(worktree / "skill").prefix == "skill"


def test_the_callers_git_variables_do_not_reach_git(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = other_repository(tmp_path)
    secret = git(other, "rev-parse", "HEAD:secret.txt").strip()
    monkeypatch.setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", str(other / ".git" / "objects"))

    with (
        open_repository(repo).objects(max_tree_entries=1000) as objects,
        pytest.raises(GitError) as raised,
    ):
        objects.read(secret)

    assert (
        raised.value.message == f"object {secret} is missing from the repository (a shallow clone?)"
    )


def test_a_folder_in_no_repository_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))

    with pytest.raises(NotARepository, match=r"^no \.git here or in a folder above$"):
        open_repository(plain)


def test_a_bad_ref_is_one_line(repo: Path) -> None:
    with pytest.raises(GitError) as raised:
        open_repository(repo).resolve("no-such-ref", failure="not a ref")

    assert raised.value.message == "not a ref (git: Needed a single revision)"


def test_a_tree_over_the_entry_bound_stops_with_one_line(repo: Path) -> None:
    blob = git(repo, "hash-object", "-w", "--stdin", stdin="x\n").strip()
    listing = "".join(f"100644 blob {blob}\tfile-{i}\n" for i in range(50))
    tree = git(repo, "mktree", stdin=listing).strip()

    with (
        open_repository(repo).objects(max_tree_entries=20) as objects,
        pytest.raises(GitError) as raised,
    ):
        objects.tree(tree)

    assert raised.value.message == (
        f"tree {tree} holds more than 20 entries (limit EVALSITE_GIT_MAX_TREE_ENTRIES)"
    )


def test_output_past_its_bound_is_one_line_not_memory(repo: Path) -> None:
    with pytest.raises(GitError) as raised:
        open_repository(repo).run("log", "HEAD", failure="cannot read the log", max_output=10)

    assert raised.value.message == "cannot read the log (git printed more than 10 bytes)"


def test_a_git_that_prints_nothing_is_stopped_after_its_timeout() -> None:
    process = subprocess.Popen(
        ["sleep", "30"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        out = GitStream(process, failure="cannot read", timeout=0.2)
        with pytest.raises(GitError, match=r"^cannot read \(git printed nothing for 0\.2 s\)$"):
            out.read_all(limit=100)
    finally:
        process.kill()
        process.wait()


def test_a_git_that_trickles_is_stopped_at_its_total_time() -> None:
    trickle = "while true; do printf x; sleep 0.05; done"
    process = subprocess.Popen(
        ["sh", "-c", trickle], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        out = GitStream(process, failure="cannot read", timeout=5, total=0.5)
        with pytest.raises(GitError, match=r"^cannot read \(git did not finish within 0\.5 s\)$"):
            out.read_all(limit=1_000_000)
    finally:
        process.kill()
        process.wait()
