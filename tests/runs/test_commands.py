"""`importworkspace` and `quickstart` through call_command, as cron and users run them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from grading.models import AssertionResult, Grading
from runs.models import EvalCase, Iteration, Run, Skill
from tests.factories import eval_magic_iteration

pytestmark = pytest.mark.django_db


def run_command(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_importworkspace_prints_one_summary_line(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)

    output = run_command("importworkspace", str(folder))

    assert output.splitlines() == [
        "Imported skills: 1 created, 0 updated, 0 skipped; "
        "eval definitions: 1 created, 0 updated, 0 skipped; "
        "iterations: 1 created, 0 updated, 0 skipped; runs: 2 created, 0 updated, 0 skipped"
    ]


def test_importworkspace_fails_with_a_one_line_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()

    with pytest.raises(CommandError) as info:
        run_command("importworkspace", str(empty))

    assert str(info.value).startswith(f"{empty}: no workspace found here")
    assert "\n" not in str(info.value)


def test_importworkspace_exits_non_zero_from_the_shell(tmp_path: Path) -> None:
    import subprocess
    import sys

    empty = tmp_path / "empty"
    empty.mkdir()
    result = subprocess.run(
        [sys.executable, "manage.py", "importworkspace", str(empty)],
        capture_output=True,
        text=True,
        env={
            "SECRET_KEY": "x",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "PATH": "/usr/bin:/bin",
        },
        cwd=Path(__file__).resolve().parents[2],
    )

    assert result.returncode == 1
    assert result.stderr.strip() == f"CommandError: {empty}: no workspace found here " + (
        "(expected eval-magic iteration folders, a promoted baseline, a skill-creator "
        "workspace or a skill folder)"
    )


def test_importworkspace_dry_run_saves_nothing(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)

    output = run_command("importworkspace", "--dry-run", str(folder))

    assert output.startswith("Dry run, nothing saved: skills: 1 created")
    assert Run.objects.count() == 0


def test_quickstart_imports_the_sample_and_creates_a_login_once() -> None:
    output = run_command("quickstart", "--no-serve")

    assert "Sample workspace: Imported skills: 2 created" in output
    assert "Log in as 'admin' with password '" in output
    assert get_user_model().objects.get(username="admin").is_superuser
    again = run_command("quickstart", "--no-serve")
    assert "iterations: 0 created, 0 updated, 6 skipped" in again
    assert "changepassword admin" in again


def test_the_sample_exercises_what_the_dashboard_must_show() -> None:
    run_command("quickstart", "--no-serve")

    assert Skill.objects.count() == 2
    assert set(Iteration.objects.values_list("mode", flat=True)) == {"new-skill", "revision"}
    assert set(Iteration.objects.values_list("source_kind", flat=True)) == {
        "eval-magic",
        "skill-creator",
    }
    assert Run.objects.filter(run_index=3).exists()  # multi-run cells
    assert EvalCase.objects.filter(skill_should_trigger=False).exists()  # a negative eval
    assert AssertionResult.objects.filter(confidence__lt=0.7).exists()  # needs review
    assert Iteration.objects.filter(missing_gradings__gt=0).exists()
    assert Grading.objects.filter(summary_computed=True).exists()
    assert Run.objects.filter(final_message__contains="<script>").exists()  # escaping
