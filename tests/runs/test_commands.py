"""`importworkspace` and `quickstart` through call_command, as cron and users run them."""

from __future__ import annotations

import io
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.core.management.base import OutputWrapper

from evalsite.settings import read_env_file
from runs.management.commands.quickstart import served_hosts, write_env_file
from runs.management.progress import CommandProgress
from runs.models import AssertionResult, EvalCase, Grading, Iteration, Run, Skill
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
        "Imported skills: 1 created, 0 updated, 0 unchanged; "
        "eval definitions: 1 created, 0 updated, 0 unchanged; "
        "iterations: 1 created, 0 updated, 0 unchanged; runs: 2 created, 0 updated, 0 unchanged"
    ]


def test_importworkspace_fails_with_a_one_line_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()

    with pytest.raises(CommandError) as info:
        run_command("importworkspace", str(empty))

    assert str(info.value).startswith(f"{empty}: no workspace found here")
    assert "\n" not in str(info.value)


@pytest.mark.slow  # a fresh interpreter per command
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

    assert output.splitlines()[:3] == [
        "Plan:",
        "  demo-skill",
        f"    iteration-1 <- {folder} (demo-skill/ holds it, as eval-magic lays out a "
        "skill's iterations)",
    ]
    assert output.splitlines()[3].startswith("Dry run, nothing saved: skills: 1 created")
    assert Run.objects.count() == 0


def test_quickstart_imports_the_sample_and_creates_a_login_once() -> None:
    output = run_command("quickstart", "--no-serve")

    assert "Sample workspace: Imported skills: 2 created" in output
    # A first import: every definition is new, and one shared by several iterations is not
    # also counted as left unchanged.
    assert re.search(r"eval definitions: \d+ created, 0 updated, 0 unchanged;", output)
    assert "Log in as 'admin' with password '" in output
    assert get_user_model().objects.get(username="admin").is_superuser
    again = run_command("quickstart", "--no-serve")
    assert "iterations: 0 created, 0 updated, 6 unchanged" in again
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


@pytest.mark.slow  # a fresh interpreter per command
def test_quickstart_leaves_a_private_env_file_that_later_commands_read(
    tmp_path: Path, settings
) -> None:
    settings.EVALSITE_ENV_FILE = env_file = tmp_path / ".env"

    output = run_command("quickstart", "--no-serve")

    assert f"Wrote {env_file}" in output
    assert env_file.stat().st_mode & 0o777 == 0o600
    key = read_env_file(env_file)["SECRET_KEY"]
    assert len(key) >= 50
    run_command("quickstart", "--no-serve")
    assert read_env_file(env_file)["SECRET_KEY"] == key  # kept, never regenerated

    # A new shell with no variables: the commands the README names work as written.
    shell = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "EVALSITE_ENV_FILE": str(env_file)}
    shell["DATABASE_URL"] = f"sqlite:///{tmp_path / 'fresh.sqlite3'}"
    manage = [sys.executable, str(Path(django_settings.BASE_DIR) / "manage.py")]
    folder = eval_magic_iteration(tmp_path / "ws")
    for command in (["migrate", "-v0"], ["importworkspace", str(folder)], ["runevals", "--help"]):
        done = subprocess.run(
            [*manage, *command], env=shell, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr and "W040" not in done.stderr


@pytest.mark.slow  # a development server in a fresh interpreter
def test_a_plain_runserver_serves_the_site_after_quickstart(tmp_path: Path, settings) -> None:
    settings.EVALSITE_ENV_FILE = env_file = tmp_path / ".env"
    run_command("quickstart", "--no-serve")

    shell = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "EVALSITE_ENV_FILE": str(env_file)}
    shell["DATABASE_URL"] = f"sqlite:///{tmp_path / 'served.sqlite3'}"
    manage = [sys.executable, str(Path(django_settings.BASE_DIR) / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=shell, check=True, timeout=120)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
        env=shell,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        login = _fetch(f"http://localhost:{port}/accounts/login/", server)
        assert 'name="password"' in login
        assert "csrfmiddlewaretoken" in login
        stylesheet = re.search(r'href="(/static/[^"]+\.css)"', login).group(1)
        assert "{" in _fetch(f"http://127.0.0.1:{port}{stylesheet}", server)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _fetch(url: str, server: subprocess.Popen) -> str:
    """The page's text once the server answers (it takes a few seconds to start)."""
    for _ in range(120):
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read().decode()
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{url}: {exc.code}\n{exc.read().decode()[:2000]}") from None
        except OSError:
            if server.poll() is not None:
                raise AssertionError(server.stdout.read()) from None
            time.sleep(0.5)
    raise AssertionError(f"{url}: no answer")


def test_quickstart_completes_an_env_file_it_wrote_before_and_leaves_others_alone(
    tmp_path: Path,
) -> None:
    older = tmp_path / ".env"
    older.write_text(
        "# Written by `manage.py quickstart`; read by evalsite/settings.py. Variables set in\n"
        "# mine\nSECRET_KEY=kept-as-it-was\nANTHROPIC_API_KEY=sk-test\n"
    )

    assert write_env_file(older, hosts=served_hosts("box.local:9000")) == [
        "DEBUG",
        "EVALSITE_STYLED_404",
        "ALLOWED_HOSTS",
    ]

    assert read_env_file(older) == {
        "SECRET_KEY": "kept-as-it-was",
        "ANTHROPIC_API_KEY": "sk-test",
        "DEBUG": "1",
        "EVALSITE_STYLED_404": "1",
        "ALLOWED_HOSTS": "localhost,127.0.0.1,[::1],box.local",
    }
    assert "# mine" in older.read_text()
    assert write_env_file(older, hosts=served_hosts("8000")) == []
    foreign = tmp_path / "deployed.env"
    foreign.write_text("SECRET_KEY=operator\n")
    assert write_env_file(foreign, hosts=served_hosts("8000")) == []
    assert foreign.read_text() == "SECRET_KEY=operator\n"


def test_quickstart_allows_the_host_it_is_told_to_serve_at() -> None:
    assert served_hosts("8080") == ["localhost", "127.0.0.1", "[::1]"]
    assert served_hosts("127.0.0.1:8080") == ["localhost", "127.0.0.1", "[::1]"]
    assert served_hosts("0:8000")[-1] == "0.0.0.0"
    assert served_hosts("[::1]:80") == ["localhost", "127.0.0.1", "[::1]"]
    assert served_hosts("evals.lan:8000")[-1] == "evals.lan"


def test_the_env_file_reader_takes_what_shells_write_and_names_a_bad_line(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("# c\n\nexport A=1\nB = \"two words\"\nC='x=y'\n")
    assert read_env_file(env_file) == {"A": "1", "B": "two words", "C": "x=y"}

    env_file.write_text("A=1\nnot a pair\n")
    with pytest.raises(ImproperlyConfigured, match=r"\.env, line 2: expected KEY=value"):
        read_env_file(env_file)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_plain_lines_under_cron_and_only_for_long_work() -> None:
    out = io.StringIO()
    with CommandProgress(OutputWrapper(out), minimum=10) as progress:
        progress.step(1, 3, "short")
        progress.step(5, 10, "iteration-5")
        progress.line("kept")
    assert out.getvalue() == "[5/10] iteration-5\nkept\n"


def test_on_a_terminal_progress_is_a_bar_that_is_gone_when_done() -> None:
    out = Terminal()
    with CommandProgress(OutputWrapper(out), minimum=10) as progress:
        progress.step(5, 10, "x" * 50)
        progress.line("a finished run")
    shown = out.getvalue()
    assert "5/10" in shown and "…" + "x" * 39 in shown and "━" in shown
    assert "a finished run" in shown and "[5/10]" not in shown
    assert shown.endswith("\x1b[?25h\r\x1b[1A\x1b[2K")  # cursor shown again, bar line erased


@pytest.mark.slow  # a fresh interpreter
def test_a_database_evalsite_does_not_run_on_is_refused_by_name(tmp_path: Path) -> None:
    import sys

    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        capture_output=True,
        text=True,
        env={"SECRET_KEY": "x", "DATABASE_URL": "mysql://u:p@localhost/x", "PATH": "/usr/bin:/bin"},
        cwd=Path(__file__).resolve().parents[2],
    )

    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "django.core.exceptions.ImproperlyConfigured: DATABASE_URL names "
        "django.db.backends.mysql; evalsite runs on SQLite (sqlite:///path) or PostgreSQL "
        "(postgres://user:password@host/name)"
    )
