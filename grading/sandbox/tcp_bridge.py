"""A loopback TCP port inside the sandbox that leads to the API proxy's Unix socket.

The sandbox unshares the network: inside it there is only a loopback interface, and the one
way out is the proxy's socket file, bind-mounted in. Claude Code can speak HTTP over a Unix
socket (ANTHROPIC_UNIX_SOCKET); the other agent CLIs (OpenCode, Codex, Cline, Gemini CLI)
only take a base URL. So the harness starts this script as the sandbox's command:

    python3 -I tcp_bridge.py PORT SOCKET -- CLI ARGS...

It listens on 127.0.0.1:PORT, starts the CLI as its child (stdin, stdout and stderr passed
straight through), copies bytes both ways between each accepted connection and a new
connection to SOCKET, and exits with the CLI's status once the CLI exits. It understands
nothing of what it copies: the proxy outside judges every request (key, route, size,
budget), so an agent that talks to this port, or kills it, reaches nothing more.

Standard library only, and nothing imported from evalsite: it runs inside the sandbox with
only this file bound in (never the project, whose folder holds .env and the database).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading

_CHUNK = 64 * 1024


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(_CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                sock.shutdown(how)


def _serve(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: tcp_bridge.py PORT SOCKET -- COMMAND...", file=sys.stderr)
        return 2
    port, path, command = int(argv[0]), argv[1], argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    child = subprocess.Popen(command)
    # A signal to the bridge (the sandbox's end) reaches the CLI too.
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda number, _frame: child.send_signal(number))
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    while child.poll() is None:
        if selector.select(timeout=0.1):
            client, _ = listener.accept()
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=_serve, args=(client, path), daemon=True).start()
    listener.close()
    return child.returncode if child.returncode >= 0 else 128 - child.returncode


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main(sys.argv[1:]))
