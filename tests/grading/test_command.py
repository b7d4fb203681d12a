"""command_check: the eval author's command, run in the task folder after the agent."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from grading import sandbox
from grading.graders import command
from grading.graders.command import command_check, matrix_cells

from .conftest import validate, write


def assertion(command: str, **extra: Any) -> dict[str, Any]:
    return {"id": "check", "type": "command_check", "command": command, **extra}


def run_check(task_dir: Path, command: str, **extra: Any) -> tuple[dict, dict]:
    result, record = command_check(assertion(command, **extra), task_dir=task_dir)
    validate(record, "command-check.schema.json")
    return result, record


def test_a_zero_exit_passes_with_exit_code_evidence(task_dir: Path) -> None:
    result, record = run_check(task_dir, "cat README.md")
    assert result.as_json() == {
        "id": "check",
        "passed": True,
        "evidence": "exit code matched 0",
        "confidence": 1.0,
        "grader": "command_check",
    }
    assert record == {
        "id": "check",
        "passed": True,
        "evidence": "exit code matched 0",
        "expected_exit_code": 0,
        "actual_exit_code": 0,
        "stdout": "hello\n",
        "stderr": "",
    }


def test_a_wrong_exit_code_fails_saying_both_codes_and_the_stderr(task_dir: Path) -> None:
    result, record = run_check(task_dir, "echo oops >&2; exit 3")
    assert result.passed is False
    assert result.evidence == 'exit code 3, expected 0; stderr: "oops"'
    assert record["actual_exit_code"] == 3
    assert record["stderr"] == "oops\n"


def test_expect_exit_code_and_expect_stdout(task_dir: Path) -> None:
    result, _ = run_check(
        task_dir, "echo 'tests: 4 passed'; exit 1", expect_exit_code=1, expect_stdout=r"\d+ passed"
    )
    assert result.evidence == r'exit code matched 1; stdout matched regex "\d+ passed"'
    result, _ = run_check(task_dir, "echo '1 failed'", expect_stdout=r"\d+ passed")
    assert result.passed is False
    assert result.evidence == r'exit code matched 0; stdout did not match regex "\d+ passed"'


def test_expect_stdout_uses_rust_dollar_semantics(task_dir: Path) -> None:
    # `echo` ends with a newline: Python's `$` would match before it, Rust's does not.
    result, _ = run_check(task_dir, "echo ok", expect_stdout="ok$")
    assert result.passed is False
    result, _ = run_check(task_dir, "printf ok", expect_stdout="ok$")
    assert result.passed is True


def test_an_invalid_stdout_regex_fails_without_running(task_dir: Path) -> None:
    result, record = run_check(task_dir, "touch ran", expect_stdout="(?=x)")
    assert result.passed is False
    assert result.evidence.startswith("invalid expect_stdout regex /(?=x)/: lookaround")
    assert result.confidence == 0.0  # the eval's fault, for a person to look at
    assert not (task_dir / "ran").exists()
    assert record["actual_exit_code"] is None


def test_output_is_kept_to_2_kib_but_the_regex_sees_all_of_it(task_dir: Path) -> None:
    command = "head -c 5000 /dev/zero | tr '\\0' x; echo END; head -c 3000 /dev/zero >&2"
    result, record = run_check(task_dir, command, expect_stdout="END")
    assert result.passed is True
    assert record["stdout"] == "x" * 2048
    assert len(record["stderr"].encode()) <= 2048


def test_a_multibyte_character_is_never_cut_in_half(task_dir: Path) -> None:
    _, record = run_check(
        task_dir, "printf 'a'; i=0; while [ $i -lt 1500 ]; do printf 'é'; i=$((i+1)); done"
    )
    assert record["stdout"] == "a" + "é" * 1023  # 1 + 2046 bytes; one more would be 2049


def test_a_timed_out_command_fails_and_its_children_are_killed(task_dir: Path) -> None:
    started = time.monotonic()
    result, record = command_check(
        assertion("sleep 30 & sleep 30; echo never"), task_dir=task_dir, timeout=0.5
    )
    assert time.monotonic() - started < 10
    assert result.passed is False
    assert result.evidence == "timed out after 0.5 s"
    assert record["actual_exit_code"] is None
    validate(record, "command-check.schema.json")


def test_a_command_killed_by_a_signal_reports_the_shell_status(task_dir: Path) -> None:
    # The sandbox reports a signal death as a shell does, 128 + N (bwrap cannot tell more).
    result, record = run_check(task_dir, "kill -9 $$")
    assert result.evidence == "exit code 137, expected 0"
    assert record["actual_exit_code"] == 137


def test_it_runs_in_the_task_folder(task_dir: Path) -> None:
    result, record = run_check(task_dir, "pwd")
    assert Path(record["stdout"].strip()).resolve() == task_dir.resolve()


def test_only_the_allow_listed_environment_reaches_the_command(
    task_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "SECRET_KEY": "django-fake",
        "DATABASE_URL": "postgres://u:p@h/db",
        "GITHUB_TOKEN": "ghp_fake",
        "AWS_SECRET_ACCESS_KEY": "aws-fake",
        "DEPLOY_PAT": "pat-fake",
        "CLIENT_ID": "client-fake",
        "DJANGO_SETTINGS_MODULE": "evalsite.settings",
        "ORDINARY_SETTING": "ordinary-fake",  # an allow-list: not even this is inherited
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    command = "env; cat /proc/1/environ /proc/$PPID/environ | tr '\\0' '\\n'; " + " && ".join(
        f'test -z "${{{name}+x}}"' for name in secrets
    )
    result, record = run_check(task_dir, command)
    assert result.passed is True, record
    for value in secrets.values():
        assert value not in record["stdout"]
    assert f"HOME={task_dir.resolve()}" in record["stdout"].splitlines()


def test_git_location_variables_never_reach_the_command(
    task_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere.git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "index"))
    result, record = run_check(
        task_dir,
        'git rev-parse --show-toplevel && echo "author=$GIT_AUTHOR_NAME"',
        env={"GIT_AUTHOR_NAME": "Eval Author"},  # what the command needs, the eval says
    )
    assert result.passed is True, record
    top, author = record["stdout"].splitlines()
    assert Path(top).resolve() == task_dir.resolve()
    assert author == "author=Eval Author"


def test_the_command_sees_nothing_outside_the_task_folder(task_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("top secret")
    project = Path(__file__).resolve().parents[2]
    result, record = run_check(
        task_dir,
        f"cat ../secret.txt {project / 'manage.py'}; touch ../escaped /usr/escaped; "
        "echo inside > made-here.txt",
    )
    assert result.passed is True, record  # the last command worked
    assert "top secret" not in record["stdout"] and "django" not in record["stdout"]
    assert record["stderr"].count("No such file or directory") == 2
    assert not (tmp_path / "escaped").exists()
    assert (task_dir / "made-here.txt").read_text() == "inside\n"


def test_a_command_that_hits_a_sandbox_limit_fails_naming_it(task_dir: Path) -> None:
    result, record = run_check(task_dir, "for i in $(seq 400); do sleep 5 & done; wait")
    assert result.passed is False
    assert result.evidence == "stopped by the sandbox: it started more than 256 processes"
    assert record["actual_exit_code"] is None


def test_a_catastrophic_expect_stdout_fails_instead_of_hanging(
    task_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(command, "REGEX_SECONDS", 0.2)
    started = time.monotonic()
    result, _ = run_check(task_dir, "printf 'a%.0s' $(seq 5000); printf b", expect_stdout="(a+)+$")
    assert time.monotonic() - started < 5
    assert result.passed is False
    assert result.evidence == 'exit code matched 0; stdout regex "(a+)+$" took longer than 0.2 s'


def test_without_bwrap_it_refuses_rather_than_run_unsandboxed(
    task_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "sandbox_problem", lambda: "bubblewrap (bwrap) is not installed")
    with pytest.raises(sandbox.SandboxUnavailable, match="not installed"):
        command_check(assertion("touch ran"), task_dir=task_dir)
    assert not (task_dir / "ran").exists()

    with sandbox.unsandboxed():  # --unsafe-no-sandbox: the same check, run bare
        result, _ = command_check(assertion("touch ran"), task_dir=task_dir)
    assert result.passed is True and (task_dir / "ran").exists()


def test_env_overrides_reach_the_command(task_dir: Path) -> None:
    result, _ = run_check(task_dir, 'test "$MODE" = strict', env={"MODE": "strict"})
    assert result.passed is True


def test_matrix_cells_are_the_product_over_sorted_keys() -> None:
    assert matrix_cells({"B": ["2", "1"], "A": ["x", "y"]}) == [
        {"A": "x", "B": "2"},
        {"A": "x", "B": "1"},
        {"A": "y", "B": "2"},
        {"A": "y", "B": "1"},
    ]
    assert matrix_cells(None) == []


def test_every_matrix_cell_runs_and_all_must_pass(task_dir: Path) -> None:
    command = 'echo "$A$B$C" >> order.txt; test "$A$B" != y2'
    result, record = run_check(
        task_dir,
        command,
        matrix={"B": ["2", "1"], "A": ["x", "y"]},
        env={"A": "overridden", "C": "!"},
    )
    assert (task_dir / "order.txt").read_text().split() == ["x2!", "x1!", "y2!", "y1!"]
    assert result.passed is False
    assert result.evidence == (
        "3/4 matrix cells passed; failed cells: A=y, B=2 (exit code 1, expected 0)"
    )
    assert record["actual_exit_code"] is None
    assert record["stdout"] == record["stderr"] == ""
    assert [cell["env"] for cell in record["cells"]][2] == {"A": "y", "B": "2", "C": "!"}
    assert [cell["passed"] for cell in record["cells"]] == [True, True, False, True]


def test_a_passing_matrix_says_so(task_dir: Path) -> None:
    result, _ = run_check(task_dir, "true", matrix={"V": ["1", "2"]})
    assert result.as_json() == {
        "id": "check",
        "passed": True,
        "evidence": "2/2 matrix cells passed",
        "confidence": 1.0,
        "grader": "command_check",
    }


def test_setup_files_are_copied_in_just_before(task_dir: Path, tmp_path: Path) -> None:
    evals_dir = tmp_path / "skill" / "evals"
    write(evals_dir / "held-out" / "test_feature.sh", "grep -q hello README.md\n")
    write(evals_dir / "held-out" / "data" / "x.txt", "x\n")
    result, record = command_check(
        assertion(
            "sh held-out/test_feature.sh && cat held-out/data/x.txt",
            setup_files=["held-out/test_feature.sh", "held-out/data"],
        ),
        task_dir=task_dir,
        evals_dir=evals_dir,
    )
    assert result.passed is True, record
    assert (task_dir / "held-out" / "test_feature.sh").is_file()


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (["missing.sh"], "setup file 'missing.sh' not found"),
        (["../outside.sh"], "must be relative"),
        ([".git/hooks/pre-commit"], "may not write the task's .git"),
    ],
)
def test_unusable_setup_files_fail_the_check(
    task_dir: Path, tmp_path: Path, setup: list[str], message: str
) -> None:
    result, record = command_check(
        assertion("touch ran", setup_files=setup), task_dir=task_dir, evals_dir=tmp_path
    )
    assert result.passed is False
    assert message in result.evidence
    assert result.evidence.startswith("could not copy setup files: ")
    assert result.confidence == 0.0
    assert not (task_dir / "ran").exists()
    validate(record, "command-check.schema.json")


def test_a_setup_folder_never_follows_a_symlinked_subfolder(task_dir: Path, tmp_path: Path) -> None:
    evals_dir = tmp_path / "evals"
    write(evals_dir / "held" / "data" / "x.txt", "x\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (task_dir / "held").mkdir()
    (task_dir / "held" / "data").symlink_to(outside)  # left there by the agent
    result, _ = command_check(
        assertion("true", setup_files=["held"]), task_dir=task_dir, evals_dir=evals_dir
    )
    assert result.passed is False
    assert "would land outside the task folder" in result.evidence
    assert not (outside / "x.txt").exists()


def test_a_setup_file_never_lands_outside_the_task_folder(task_dir: Path, tmp_path: Path) -> None:
    evals_dir = tmp_path / "evals"
    write(evals_dir / "held" / "check.sh", "true\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (task_dir / "held").symlink_to(outside)  # left there by the agent
    result, _ = command_check(
        assertion("true", setup_files=["held/check.sh"]), task_dir=task_dir, evals_dir=evals_dir
    )
    assert result.passed is False
    assert "would land outside the task folder" in result.evidence
    assert not (outside / "check.sh").exists()
