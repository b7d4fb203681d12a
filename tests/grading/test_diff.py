"""diff_scope: the task folder against its baseline commit, as git counts it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grading.graders.diff import DiffError, diff_scope, measure_diff

from .conftest import git, make_task_dir, validate, write

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00binary\x00data"


def scope(**limits: Any) -> dict[str, Any]:
    return {"id": "small", "type": "diff_scope", **limits}


@pytest.fixture
def changed_task(tmp_path: Path) -> Path:
    """A task folder where the agent modified, deleted, added and ignored files."""
    folder = make_task_dir(
        tmp_path / "changed",
        {
            "src/app.py": "one\ntwo\nthree\nfour\nfive\n",
            "gone.txt": "bye\nbye\n",
            "logo.png": PNG,
            ".gitignore": "build/\n",
        },
    )
    write(folder / "src/app.py", "one\nTWO\nthree\nfour\nfive\nsix\n")  # 2 added, 1 removed
    (folder / "gone.txt").unlink()  # 2 removed
    write(folder / "notes/new.md", "a\nb\nc\n")  # untracked: 3 added
    write(folder / "icon.png", PNG + b"more")  # untracked binary: 0 lines
    write(folder / "logo.png", PNG + b"changed")  # modified binary: 0 lines
    write(folder / "build/out.o", "ignored\n")  # .gitignore'd: never counts
    write(folder / ".git/agent-scratch", "inside .git\n")  # .git never counts
    return folder


def test_it_counts_added_modified_deleted_binary_and_untracked_files(changed_task: Path) -> None:
    measurement = measure_diff(changed_task)
    validate(measurement.record, "diff-scope.schema.json")
    assert measurement.record["files"] == [
        {"path": "gone.txt", "status": "deleted", "lines_added": 0, "lines_removed": 2},
        {"path": "icon.png", "status": "added", "lines_added": 0, "lines_removed": 0},
        {"path": "logo.png", "status": "modified", "lines_added": 0, "lines_removed": 0},
        {"path": "notes/new.md", "status": "added", "lines_added": 3, "lines_removed": 0},
        {"path": "src/app.py", "status": "modified", "lines_added": 2, "lines_removed": 1},
    ]
    record = measurement.record
    assert (record["files_touched"], record["lines_added"], record["lines_removed"]) == (5, 5, 3)
    # -U0 hunks: app.py has two (the changed line, the appended line); gone.txt and
    # new.md one each; binary files none.
    assert record["hunks"] == 4
    assert record["patch"] == {
        "path": "diff.patch",
        "bytes": len(measurement.patch.encode()),
        "truncated": False,
    }
    assert "+TWO" in measurement.patch and "notes/new.md" in measurement.patch


def test_within_limits_it_passes_with_the_counts_as_evidence(changed_task: Path) -> None:
    result, _ = diff_scope(scope(max_files_touched=5, max_lines_changed=8), task_dir=changed_task)
    assert result.as_json() == {
        "id": "small",
        "passed": True,
        "evidence": "files touched: 5 <= 5; lines changed: 8 <= 8 (5 added + 3 removed); hunks: 4",
        "confidence": 1.0,
        "grader": "diff_scope",
    }


def test_over_a_limit_it_fails_showing_which(changed_task: Path) -> None:
    result, _ = diff_scope(scope(max_files_touched=2, max_lines_changed=10), task_dir=changed_task)
    assert result.passed is False
    assert result.evidence == (
        "files touched: 5 > 2; lines changed: 8 <= 10 (5 added + 3 removed); hunks: 4"
    )
    result, _ = diff_scope(scope(max_lines_changed=7), task_dir=changed_task)
    assert result.passed is False
    assert result.evidence == "lines changed: 8 > 7 (5 added + 3 removed); hunks: 4"


def test_a_clause_without_a_limit_is_left_out(changed_task: Path) -> None:
    result, _ = diff_scope(scope(max_files_touched=9), task_dir=changed_task)
    assert result.evidence == "files touched: 5 <= 9; hunks: 4"


def test_an_untouched_folder_has_an_empty_diff(task_dir: Path) -> None:
    result, measurement = diff_scope(
        scope(max_files_touched=0, max_lines_changed=0), task_dir=task_dir
    )
    assert result.evidence == (
        "files touched: 0 <= 0; lines changed: 0 <= 0 (0 added + 0 removed); hunks: 0"
    )
    assert measurement is not None and measurement.patch == ""


def test_commits_staging_and_branches_do_not_hide_changes(task_dir: Path) -> None:
    write(task_dir / "README.md", "hello\nworld\n")
    git(task_dir, "checkout", "-q", "-b", "feature")
    git(task_dir, "commit", "-qam", "agent commit")
    write(task_dir / "staged.txt", "s\n")
    git(task_dir, "add", "staged.txt")
    record = measure_diff(task_dir).record
    assert [f["path"] for f in record["files"]] == ["README.md", "staged.txt"]
    assert (record["lines_added"], record["lines_removed"]) == (2, 0)
    # The repository's own index is left as the agent left it.
    assert git(task_dir, "diff", "--cached", "--name-only").split() == ["staged.txt"]


def test_a_marked_baseline_ref_wins_over_the_first_commit(task_dir: Path) -> None:
    write(task_dir / "setup.txt", "fixture\n")
    git(task_dir, "add", "-A")
    git(task_dir, "commit", "-qm", "fixtures")
    git(task_dir, "update-ref", "refs/eval-magic/baseline", "HEAD")
    write(task_dir / "agent.txt", "x\n")
    assert [f["path"] for f in measure_diff(task_dir).record["files"]] == ["agent.txt"]


def test_paths_with_spaces_and_unicode_are_reported_as_they_are(task_dir: Path) -> None:
    write(task_dir / "dir with space/naïve file.txt", "x\n")
    assert measure_diff(task_dir).record["files"][0]["path"] == "dir with space/naïve file.txt"


def test_a_folder_that_is_not_a_repository_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(DiffError, match="not a git repository"):
        measure_diff(tmp_path / "plain")
    result, measurement = diff_scope(scope(max_files_touched=1), task_dir=tmp_path / "plain")
    assert measurement is None
    assert result.passed is False
    assert result.confidence == 0.0
    assert result.evidence.startswith("could not measure the diff: ")


def test_git_location_variables_cannot_redirect_the_measurement(
    changed_task: Path, task_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_DIR", str(task_dir / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(task_dir))
    assert measure_diff(changed_task).record["files_touched"] == 5


def test_a_huge_patch_is_capped_with_a_marker(
    task_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("grading.graders.diff.PATCH_CAP_BYTES", 1000)
    write(task_dir / "big.txt", "line\n" * 1000)
    measurement = measure_diff(task_dir)
    assert measurement.record["patch"]["truncated"] is True
    assert measurement.patch.startswith("diff --git a/big.txt b/big.txt")
    assert "[diff.patch truncated:" in measurement.patch
    assert measurement.record["patch"]["bytes"] == len(measurement.patch.encode())
    assert measurement.record["lines_added"] == 1000  # the counts are not capped


def test_commands_the_agent_planted_in_git_config_run_sandboxed(
    task_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
    outside = tmp_path / "seen-env.txt"
    inside = task_dir / ".git" / "seen-env.txt"  # writable to it, never counted as a change
    git(
        task_dir,
        "config",
        "filter.leak.clean",
        f"env >> {inside}; env >> {outside} 2>/dev/null; cat /proc/1/environ >> {inside}; cat",
    )
    write(task_dir / ".gitattributes", "*.txt filter=leak\n")
    write(task_dir / "new.txt", "x\n")

    assert measure_diff(task_dir).record["files_touched"] == 2
    assert inside.exists()  # the filter ran, as git would run it for the agent…
    assert "sk-ant-must-not-leak" not in inside.read_text(errors="replace")
    assert not outside.exists()  # …inside the sandbox: nothing outside the task folder
