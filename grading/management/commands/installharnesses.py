"""`manage.py installharnesses [NAME ...]`: install the agent CLIs runevals can drive.

Runs `npm install --prefix EVALSITE_HARNESS_DIR` of the pinned releases (agent_clis.CLIS),
all of them unless names are given, then prints each CLI's path and version. Exit status:
0 installed; 1 an unknown name; 2 npm is missing or failed (its last lines are printed).
"""

from __future__ import annotations

import shutil
import subprocess

from django.core.management.base import BaseCommand, CommandError, CommandParser

from grading.evaluating import agent_clis


class Command(BaseCommand):
    help = (
        "Install the agent CLIs of the npm registry that runevals --harness drives (opencode, "
        "codex, cline, gemini) at their pinned releases into EVALSITE_HARNESS_DIR."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*", help=f"default: {' '.join(agent_clis.CLIS)}")
        parser.add_argument(
            "--check", action="store_true", help="install nothing: say which are installed"
        )

    def handle(self, *args, **options) -> None:
        names = options["names"] or list(agent_clis.CLIS)
        unknown = [name for name in names if name not in agent_clis.CLIS]
        if unknown:
            known = ", ".join(agent_clis.CLIS)
            raise CommandError(f"unknown harness {unknown[0]!r} (known: {known})", returncode=1)
        if not options["check"]:
            self._install(names)
        missing = 0
        for name in names:
            binary = agent_clis.cli_path(name)
            if binary is None:
                missing += 1
                self.stdout.write(f"{name}: not installed ({agent_clis.CLIS[name].spec})")
            else:
                version = agent_clis.cli_version(binary) or "no version printed"
                self.stdout.write(f"{name}: {binary} ({version})")
        if missing and not options["check"]:
            raise CommandError("npm finished but some CLIs are not installed", returncode=2)

    def _install(self, names: list[str]) -> None:
        if shutil.which("npm") is None:
            raise CommandError(
                "npm is not installed: install Node.js 20 or newer (apt-get install -y npm)",
                returncode=2,
            )
        agent_clis.harness_dir().mkdir(parents=True, exist_ok=True)
        command = agent_clis.install_command(names)
        self.stdout.write("Installing " + ", ".join(agent_clis.CLIS[n].spec for n in names))
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            tail = " ".join((done.stderr or done.stdout).split()[-40:])
            raise CommandError(f"npm install failed (exit {done.returncode}): {tail}", returncode=2)
