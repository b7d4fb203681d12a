"""Django in a subprocess: the environment every bench gives `manage.py`, and running it.

Each bench measures the site as deployed (production settings, DEBUG off) on a database of
its own, so Django always runs in a child process with `DATABASE_URL` set.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
MANAGE = PROJECT / "manage.py"


def django_env(database_url: str, **extra: str) -> dict[str, str]:
    """The environment of a Django subprocess: production settings on `database_url`."""
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="evalsite.settings",
        SECRET_KEY="bench",
        DEBUG="0",
        DATABASE_URL=database_url,
        **extra,
    )
    return env


def manage(args: list[str], env: dict[str, str]) -> str:
    """Run `manage.py ARGS… --skip-checks` in a subprocess; its output, or exit on failure.

    System checks are skipped: they are not what is measured, and a half-edited view
    elsewhere in the project should not stop a benchmark.
    """
    proc = subprocess.run(
        [sys.executable, str(MANAGE), *args, "--skip-checks"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
    )
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed (exit {proc.returncode}):\n{output}")
    return output


def migrate(database_url: str) -> None:
    """Run the migrations on a fresh database (untimed everywhere)."""
    manage(["migrate", "--verbosity", "0"], django_env(database_url))


def load_workspaces(paths: list[Path], env: dict[str, str]) -> float:
    """Migrate the database and import `paths` into it; the import's seconds."""
    manage(["migrate", "--verbosity", "0"], env)
    start = time.perf_counter()
    output = manage(["importworkspace", *map(str, paths)], env)
    seconds = time.perf_counter() - start
    print(f"  imported in {seconds:.1f} s: {output.splitlines()[-1] if output else '(no output)'}")
    return seconds
