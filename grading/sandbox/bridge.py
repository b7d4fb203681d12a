"""Give a sandboxed CLI that only takes a base URL a way to the API proxy's Unix socket.

`bridged(argv, folder)` copies tcp_bridge.py into `folder` (the run's socket folder, which
the harness binds read-only into the sandbox beside the socket) and returns the command that
runs the CLI under it, and the base URL to give the CLI: http://127.0.0.1:PORT, a port of
the sandbox's own loopback (its network namespace has nothing else). Unsandboxed
(--unsafe-no-sandbox) the port is the host's, so a free one is chosen.
"""

from __future__ import annotations

import shutil
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

_SCRIPT = Path(__file__).with_name("tcp_bridge.py")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def bridged(
    argv: Sequence[str], folder: Path, *, socket_name: str = "api.sock"
) -> tuple[list[str], str]:
    """(the command to spawn, the base URL the CLI is to call)."""
    script = folder / "tcp_bridge.py"
    shutil.copyfile(_SCRIPT, script)
    port = free_port()
    command = [sys.executable, "-I", str(script), str(port), str(folder / socket_name), "--"]
    return [*command, *argv], f"http://127.0.0.1:{port}"
