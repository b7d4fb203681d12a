"""`manage.py quickstart`: a working dashboard with sample data, in one command."""

from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.management.utils import get_random_secret_key

from runs.importing import ImportFailure, import_workspace

SAMPLE_WORKSPACE = Path(__file__).resolve().parents[2] / "sample"
USERNAME = "admin"


def write_env_file(path: Path) -> Path | None:
    """Give the project a `.env` with a generated SECRET_KEY, unless it has one already, so
    `importworkspace`, `runevals` and the README's cron line work in a new shell. Returns
    the file when it was written."""
    if path.exists():
        return None
    path.write_text(
        "# Written by `manage.py quickstart`; read by evalsite/settings.py. Variables set in\n"
        "# the environment win. Keep this file private: it holds the site's secret key.\n"
        f"SECRET_KEY={get_random_secret_key()}\n",
        encoding="utf-8",
    )
    path.chmod(0o600)
    return path


class Command(BaseCommand):
    help = "Migrate the database, import the bundled sample workspace, create a login, serve."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "addrport", nargs="?", default="127.0.0.1:8000", help="Where to serve the site."
        )
        parser.add_argument(
            "--no-serve", action="store_true", help="Set everything up, then exit without serving."
        )

    def handle(self, *args: object, addrport: str, no_serve: bool, **options: object) -> None:
        verbose = options["verbosity"] > 0
        wrote = write_env_file(settings.EVALSITE_ENV_FILE) if settings.EVALSITE_ENV_FILE else None
        if wrote and verbose:
            self.stdout.write(f"Wrote {wrote}: a SECRET_KEY for every later command")
        call_command("migrate", interactive=False, verbosity=0)
        try:
            report = import_workspace([SAMPLE_WORKSPACE])
        except ImportFailure as exc:
            raise CommandError(f"the bundled sample did not import: {exc.message}") from None
        if verbose:
            self.stdout.write(f"Sample workspace: {report.summary()}")
        login = self._ensure_login()
        if verbose:
            self.stdout.write(login)
        if no_serve:
            return
        if not settings.DEBUG:
            # Without DEBUG the development server serves no static files and accepts no
            # hosts but ALLOWED_HOSTS: the sample is for trying evalsite out locally.
            self.stdout.write(
                self.style.WARNING("DEBUG is off; run `DEBUG=1 python manage.py quickstart`.")
            )
        self.stdout.write(f"Open http://{addrport}/ (Ctrl-C to stop)")
        call_command("runserver", addrport, use_reloader=False)

    def _ensure_login(self) -> str:
        users = get_user_model()
        if users.objects.filter(username=USERNAME).exists():
            return (
                f"Log in as {USERNAME!r} with the password printed when it was created "
                f"(`python manage.py changepassword {USERNAME}` sets a new one)."
            )
        password = secrets.token_urlsafe(12)
        users.objects.create_superuser(USERNAME, email="", password=password)
        return f"Log in as {USERNAME!r} with password {password!r}"
