"""The agent CLIs from the npm registry: which release of each, where they are installed, and
how they are found.

`python manage.py installharnesses` runs `npm install --prefix EVALSITE_HARNESS_DIR` of the
pinned packages below (every one carries its binary inside the registry package: nothing is
downloaded at install or at run time). A harness finds its CLI with `cli_path(name)`; one
that is not installed answers `missing(name)`, a one-line message that says how to install
it. The pins are exact: a harness maps its CLI's event stream, and a new release may change
it, so a pin moves only with the harness code and its tests.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings


@dataclass(frozen=True)
class AgentCli:
    #: The harness's name (`runevals --harness NAME`).
    harness: str
    package: str
    version: str
    #: The command the package installs in node_modules/.bin.
    binary: str

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"


# fmt: off
CLIS: dict[str, AgentCli] = {
    cli.harness: cli
    for cli in (
        AgentCli("opencode", "opencode-ai", "1.18.33", "opencode"),
        AgentCli("codex", "@openai/codex", "0.171.0", "codex"),
        AgentCli("cline", "cline", "3.0.65", "cline"),
        AgentCli("gemini", "@google/gemini-cli", "0.61.0", "gemini"),
    )
}
# fmt: on


def harness_dir() -> Path:
    """Where the CLIs are installed: EVALSITE_HARNESS_DIR (default `<project>/.harnesses`)."""
    return Path(settings.EVALSITE_HARNESS_DIR)


def cli_path(harness: str) -> Path | None:
    """The installed binary of `harness`'s CLI, None when it is not installed."""
    cli = CLIS[harness]
    binary = harness_dir() / "node_modules" / ".bin" / cli.binary
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def missing(harness: str) -> str:
    """Why `--harness NAME` cannot run here, in one line."""
    cli = CLIS[harness]
    return (
        f"--harness {harness} needs {cli.spec}, not installed in {harness_dir()}: "
        f"run python manage.py installharnesses {harness}"
    )


@functools.cache
def cli_version(binary: Path) -> str:
    """What `binary --version` prints (its last line), or "" when it printed nothing."""
    # A throwaway HOME: some CLIs create their config folders on any start, --version too.
    with tempfile.TemporaryDirectory(prefix="evalsite-cli-version-") as home:
        try:
            done = subprocess.run(
                [str(binary), "--version"],
                capture_output=True,
                text=True,
                timeout=60,
                env={"PATH": os.environ.get("PATH", ""), "HOME": home},
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def node_folders(binary: Path) -> list[Path]:
    """What a CLI needs bound read-only into the sandbox: the install folder it runs from,
    and Node.js's own folder when node is not under the system paths the sandbox binds."""
    folders = [harness_dir().resolve()]
    node = shutil.which("node")
    if node is not None:
        prefix = Path(node).resolve().parent.parent
        if not any(prefix.is_relative_to(p) for p in (Path("/usr"), Path("/bin"), Path("/opt"))):
            folders.append(prefix)
    return folders


def install_command(harnesses: list[str]) -> list[str]:
    """The npm command that installs the pinned CLIs of `harnesses`."""
    npm = shutil.which("npm") or "npm"
    specs = [CLIS[name].spec for name in harnesses]
    return [
        npm,
        "install",
        "--prefix",
        str(harness_dir()),
        "--no-audit",
        "--no-fund",
        "--save-exact",
        *specs,
    ]
