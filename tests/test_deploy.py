"""The README's Deploy section, followed on this machine: production settings, gunicorn.

On the PostgreSQL half of CI (DATABASE_URL names PostgreSQL) the site is deployed on a fresh
PostgreSQL database, as the README says; otherwise on a fresh SQLite file. Each step runs the
way an operator would, as a command in a shell holding only the documented variables.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import dj_database_url
import pytest
from django.conf import settings

MANAGE = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
HOST = "evalsite.example"


@pytest.fixture
def database_url(tmp_path: Path) -> Iterator[str]:
    """A new, empty database for the deployment, dropped afterwards."""
    given = os.environ.get("DATABASE_URL", "")
    if not given.startswith(("postgres://", "postgresql://")):
        yield f"sqlite:///{tmp_path / 'site.sqlite3'}"
        return
    import psycopg

    config = dj_database_url.parse(given)
    name = f"evalsite_deploy_{secrets.token_hex(4)}"
    admin = {
        "host": config["HOST"] or "127.0.0.1",
        "port": config["PORT"] or 5432,
        "user": config["USER"],
        "password": config["PASSWORD"],
        "dbname": config["NAME"],
        "autocommit": True,
    }
    with psycopg.connect(**admin) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urllib.parse.urlunsplit(
            (
                "postgres",
                f"{admin['user']}:{admin['password']}@{admin['host']}:{admin['port']}",
                f"/{name}",
                "",
                "",
            )
        )
    finally:
        with psycopg.connect(**admin) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def production(database_url: str, tmp_path: Path) -> dict[str, str]:
    """The documented production variables, and nothing else from this process."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "EVALSITE_ENV_FILE": "",  # the operator's variables only, not a developer's .env
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "0",
        "DATABASE_URL": database_url,
        "ALLOWED_HOSTS": f"{HOST},127.0.0.1",
        "EVALSITE_HTTPS": "1",
        "CSRF_TRUSTED_ORIGINS": f"https://{HOST}",
        "EVALSITE_STATIC_ROOT": str(tmp_path / "static"),
        "DJANGO_SUPERUSER_PASSWORD": "a-long-deploy-password",
    }


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*MANAGE, *args], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"manage.py {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # a redirect is an answer to look at, not to follow


class Behind:
    """Requests as the HTTPS proxy in front of gunicorn forwards them.

    Cookies are kept by hand: they are `Secure` (rightly, behind HTTPS), so a cookie jar
    would not send them over the plain HTTP between the proxy and gunicorn.
    """

    def __init__(self, port: int):
        self.base = f"http://127.0.0.1:{port}"
        self.cookies: dict[str, str] = {}
        self.opener = urllib.request.build_opener(_NoRedirect())

    def request(self, path: str, data: dict[str, str] | None = None) -> tuple[int, dict, str]:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(self.base + path, data=body)
        request.add_header("Host", HOST)
        request.add_header("X-Forwarded-Proto", "https")
        if self.cookies:
            request.add_header("Cookie", "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        if data is not None:
            request.add_header("Referer", f"https://{HOST}{path}")
        try:
            response = self.opener.open(request, timeout=20)
        except urllib.error.HTTPError as error:
            response = error
        with response:
            for cookie in response.headers.get_all("Set-Cookie") or []:
                name, _, value = cookie.split(";", 1)[0].partition("=")
                self.cookies[name.strip()] = value.strip()
            headers = dict(response.headers)
            headers["Set-Cookie"] = "\n".join(response.headers.get_all("Set-Cookie") or [])
            return response.status, headers, response.read().decode()


def test_the_deploy_section_gives_a_working_site(production: dict[str, str]) -> None:
    check = manage(production, "check", "--deploy", "--fail-level", "WARNING")
    assert "no issues" in check.stdout and not check.stderr.strip()
    manage(production, "migrate", "--noinput", "-v0")
    manage(production, "collectstatic", "--noinput", "-v0")
    manage(production, "createsuperuser", "--noinput", "--username", "ops", "--email", "")

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "evalsite.wsgi", "-b", f"127.0.0.1:{port}", "-w", "2"],
        env=production,
        cwd=settings.BASE_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        site = Behind(port)
        deadline = time.monotonic() + 30
        while True:
            try:
                status, headers, page = site.request("/accounts/login/")
                break
            except (ConnectionError, urllib.error.URLError):
                assert server.poll() is None, server.stdout.read().decode()
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.2)

        assert status == 200
        policy = dict(
            d.strip().split(" ", 1) for d in headers["Content-Security-Policy"].split(";")
        )
        assert policy["script-src"] == "'self'"  # no inline script, no eval
        assert policy["frame-ancestors"] == "'none'" and policy["object-src"] == "'none'"
        assert headers["Strict-Transport-Security"].startswith("max-age=31536000")
        assert "Secure" in headers["Set-Cookie"]

        stylesheet = re.search(r'href="(/static/[^"]+\.css)"', page).group(1)
        status, headers, _ = site.request(stylesheet)
        assert status == 200 and "immutable" in headers.get("Cache-Control", "")

        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        status, headers, _ = site.request(
            "/accounts/login/",
            {"username": "ops", "password": "a-long-deploy-password", "csrfmiddlewaretoken": token},
        )
        assert status == 302, "the login was refused"
        status, _, overview = site.request("/")
        assert status == 200 and "<h1" in overview

        status, headers, _ = site.request("/no-such-page/")
        assert status == 404 and "Content-Security-Policy" in headers
    finally:
        server.terminate()
        server.wait(timeout=20)


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A real redis-server of this test's own, on a free port."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)


LOGIN_ATTEMPT = """
from django.test import Client
client = Client(HTTP_HOST="{host}", HTTP_X_FORWARDED_PROTO="https")
for _ in range({times}):
    page = client.post("/accounts/login/", {{"username": "ops", "password": "{password}"}})
print("refused" if b"Too many failed logins" in page.content else page.status_code)
"""


def test_with_redis_url_every_process_shares_the_login_throttle(
    production: dict[str, str], redis_url: str
) -> None:
    env = {**production, "REDIS_URL": redis_url}
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "collectstatic", "--noinput", "-v0")
    manage(env, "createsuperuser", "--noinput", "--username", "ops", "--email", "")

    # Ten wrong passwords in one worker process…
    attempt = LOGIN_ATTEMPT.format(host=HOST, times=10, password="wrong")
    manage(env, "shell", "--no-imports", "-c", attempt)
    # …and another process refuses even the right one, as another replica would.
    attempt = LOGIN_ATTEMPT.format(host=HOST, times=1, password="a-long-deploy-password")
    assert manage(env, "shell", "--no-imports", "-c", attempt).stdout.strip() == "refused"
    # Without Redis each process counts alone: the same right password gets in.
    assert manage(production, "shell", "--no-imports", "-c", attempt).stdout.strip() == "302"


def test_the_readme_cron_line_runs_as_written(tmp_path: Path) -> None:
    """The line from the README, on a checkout whose only settings are quickstart's .env."""
    readme = (Path(settings.BASE_DIR) / "README.md").read_text(encoding="utf-8")
    line = re.search(r"```cron\n(.+?)\n```", readme, re.DOTALL).group(1).strip()
    command = line.split(None, 5)[5]  # past the five schedule fields
    assert command.startswith("cd /srv/evalsite && .venv/bin/python manage.py runevals skills/*")
    # Here, not on /srv: this checkout, this interpreter, the sample's skills, and --dry-run
    # so that no API is called; the rest of the line stays as the README wrote it.
    command = (
        command.replace("/srv/evalsite", shlex.quote(str(settings.BASE_DIR)))
        .replace(".venv/bin/python", shlex.quote(sys.executable))
        .replace("skills/*", "runs/sample/skills/*")
        .replace("/var/log/evalsite-runevals.log", shlex.quote(str(tmp_path / "cron.log")))
        .replace(" --fail-on-regression", " --fail-on-regression --dry-run")
    )
    env_file = tmp_path / ".env"
    env_file.write_text(f"SECRET_KEY={secrets.token_urlsafe(50)}\n", encoding="utf-8")
    cron = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "EVALSITE_ENV_FILE": str(env_file)}

    done = subprocess.run(["/bin/sh", "-c", command], env=cron, timeout=120)

    log = (tmp_path / "cron.log").read_text(encoding="utf-8")
    assert done.returncode == 0, log
    assert "taming-flaky-tests" in log and "Traceback" not in log
