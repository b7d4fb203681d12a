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


#: The first line of the `.env` quickstart writes: a file it may add its settings to later.
ENV_HEADER = "# Written by `manage.py quickstart`; read by evalsite/settings.py."
#: Hosts every local try-out answers to; the one quickstart serves at is added.
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def write_env_file(path: Path, *, hosts: list[str]) -> list[str]:
    """Give the project a `.env` with what a plain `manage.py runserver` needs after
    quickstart, as quickstart serves the site: a generated SECRET_KEY, development
    settings (DEBUG, so the development server serves the static files; the site's own
    404 page) and ALLOWED_HOSTS with `hosts`. A `.env` quickstart wrote earlier gets the
    settings it lacks (and any new host); one written by anyone else is left as it is.
    Returns the names of the settings written."""
    if path.exists() and not path.read_text(encoding="utf-8").startswith(ENV_HEADER):
        return []
    present = _pairs(path.read_text(encoding="utf-8")) if path.exists() else {}
    wanted = {
        "SECRET_KEY": present.get("SECRET_KEY") or get_random_secret_key(),
        "DEBUG": present.get("DEBUG", "1"),
        "EVALSITE_STYLED_404": present.get("EVALSITE_STYLED_404", "1"),
        "ALLOWED_HOSTS": ",".join(_union(present.get("ALLOWED_HOSTS", ""), hosts)),
    }
    written = [key for key, value in wanted.items() if present.get(key) != value]
    if not written:
        return []
    lines = (
        path.read_text(encoding="utf-8").splitlines()
        if path.exists()
        else [
            f"{ENV_HEADER} Variables set in",
            "# the environment win. Keep this file private: it holds the site's secret key.",
            "# DEBUG and the hosts are for trying evalsite out on this machine: a server for",
            "# others needs its own settings (README, Deploy).",
        ]
    )
    for number, line in enumerate(lines):
        key = line.strip().removeprefix("export ").partition("=")[0].strip()
        if key in written:
            lines[number] = f"{key}={wanted[key]}"
    lines += [f"{key}={wanted[key]}" for key in written if key not in present]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return written


def _pairs(text: str) -> dict[str, str]:
    """The file's `KEY=value` lines, values as written (so writing them back keeps them);
    evalsite/settings.py is what reads them for use."""
    pairs = {}
    for line in text.splitlines():
        key, sep, value = line.strip().removeprefix("export ").partition("=")
        if sep and not key.startswith("#"):
            pairs[key.strip()] = value.strip()
    return pairs


def _union(listed: str, hosts: list[str]) -> list[str]:
    names = [host.strip() for host in listed.split(",") if host.strip()]
    return names + [host for host in hosts if host not in names]


def served_hosts(addrport: str) -> list[str]:
    """The host names a browser may send for runserver's `addrport` ("8080",
    "0.0.0.0:8080", "[::1]:80", "box.local:8000"): the local ones, and the address given."""
    host = addrport.rpartition(":")[0]
    host = "0.0.0.0" if host == "0" else host  # runserver's shorthand
    return [*LOCAL_HOSTS, *([host] if host and host not in LOCAL_HOSTS else [])]


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
        hosts = served_hosts(addrport)
        env_file = settings.EVALSITE_ENV_FILE
        written = write_env_file(env_file, hosts=hosts) if env_file else []
        if written and verbose:
            self.stdout.write(
                f"Wrote {env_file} ({', '.join(written)}): every later command, and a plain "
                "`python manage.py runserver`, works as this one"
            )
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
        # This process read its settings before the file had the host it serves at.
        settings.ALLOWED_HOSTS = _union(",".join(settings.ALLOWED_HOSTS), hosts)
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
