"""The agent's tools: confined to the task folder, secrets stripped, output capped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runs.evaluating.tools import MAX_TOOL_OUTPUT, TaskFolder, Toolbox, tool_definitions


@pytest.fixture
def box(tmp_path: Path) -> Toolbox:
    task = tmp_path / "task"
    (task / "src").mkdir(parents=True)
    (task / "src" / "app.py").write_text("print('hi')\nvalue = 1\n")
    (tmp_path / "secret.txt").write_text("top secret")
    return Toolbox(TaskFolder(task), skills={"demo": "Skill body."})


@pytest.mark.parametrize(
    "path", ["../secret.txt", "src/../../secret.txt", "/etc/passwd", "{tmp}/secret.txt"]
)
def test_reading_outside_the_task_folder_is_refused(box: Toolbox, tmp_path: Path, path) -> None:
    output, is_error = box.run("Read", {"file_path": path.format(tmp=tmp_path)})

    assert is_error
    assert "is outside the working directory" in output
    assert "top secret" not in output


def test_a_symlink_pointing_out_is_refused(box: Toolbox, tmp_path: Path) -> None:
    (box.folder.root / "link.txt").symlink_to(tmp_path / "secret.txt")

    for tool, args in (
        ("Read", {"file_path": "link.txt"}),
        ("Write", {"file_path": "link.txt", "content": "x"}),
        ("Edit", {"file_path": "link.txt", "old_string": "top", "new_string": "x"}),
    ):
        output, is_error = box.run(tool, args)
        assert is_error and "outside the working directory" in output, tool
    assert (tmp_path / "secret.txt").read_text() == "top secret"
    assert "secret" not in box.run("Grep", {"pattern": "top secret"})[0].replace(
        "No matches found", ""
    )


def test_relative_and_absolute_paths_inside_both_work(box: Toolbox) -> None:
    absolute = str(box.folder.root / "src" / "app.py")

    assert "print('hi')" in box.run("Read", {"file_path": "src/app.py"})[0]
    assert "print('hi')" in box.run("Read", {"file_path": absolute})[0]
    assert box.run("Write", {"file_path": "new/notes.md", "content": "n"}) == (
        f"File written: {box.folder.root.resolve() / 'new' / 'notes.md'}",
        False,
    )
    assert (
        box.run(
            "Edit", {"file_path": absolute, "old_string": "value = 1", "new_string": "value = 2"}
        )[1]
        is False
    )
    assert "value = 2" in (box.folder.root / "src" / "app.py").read_text()


def test_glob_and_grep_stay_inside(box: Toolbox) -> None:
    assert box.run("Glob", {"pattern": "**/*.py"})[0].endswith("src/app.py")
    assert box.run("Glob", {"pattern": "*", "path": ".."})[1] is True
    assert (
        "app.py:2:value = 1" in box.run("Grep", {"pattern": "value", "output_mode": "content"})[0]
    )


def test_bash_runs_in_the_task_folder_without_secrets(
    box: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("SECRET_KEY", "django-secret")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:p@h/db")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")

    output, is_error = box.run("Bash", {"command": "pwd; env"})

    assert not is_error
    assert output.splitlines()[0] == str(box.folder.root)
    for secret in ("sk-ant-secret", "django-secret", "postgres://", "ghp_secret"):
        assert secret not in output
    assert "PATH=" in output


def test_bash_times_out_and_reports_failures(box: Toolbox) -> None:
    output, is_error = box.run("Bash", {"command": "sleep 5", "timeout": 200})
    assert is_error and "timed out after 0.2 s" in output

    output, is_error = box.run("Bash", {"command": "echo oops >&2; exit 3"})
    assert "oops" in output and output.endswith("Exit code 3")


def test_output_sent_back_is_capped(box: Toolbox) -> None:
    output, _ = box.run(
        "Bash", {"command": f"head -c {MAX_TOOL_OUTPUT * 2} /dev/zero | tr '\\0' a"}
    )

    assert len(output) < MAX_TOOL_OUTPUT + 100
    assert output.endswith(f"[{MAX_TOOL_OUTPUT} more characters not shown]")


def test_the_skill_tool_returns_the_body_and_only_where_offered(box: Toolbox, tmp_path) -> None:
    assert box.run("Skill", {"skill": "demo"}) == ("Skill body.", False)
    assert box.run("Skill", {"skill": "plugin:demo"}) == ("Skill body.", False)
    assert box.run("Skill", {"skill": "other"})[1] is True
    plain = Toolbox(TaskFolder(tmp_path))
    assert plain.run("Skill", {"skill": "demo"}) == ("No such tool: Skill", True)
    assert "Skill" not in [t["name"] for t in tool_definitions(with_skill=False)]
    assert os.path.isdir(tmp_path)
