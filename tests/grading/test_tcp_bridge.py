"""The loopback bridge: a sandboxed command reaches the API proxy's Unix socket through a
port of its own network namespace, and nothing else."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from grading import sandbox
from grading.evaluating.apiproxy import ApiProxy
from grading.sandbox.bridge import bridged
from tests.fakeapi import FakeAnthropic, reply

CLIENT = """
import json, sys, urllib.request
base, key = sys.argv[1], sys.argv[2]
request = urllib.request.Request(
    base + "/v1/messages",
    data=json.dumps({"model": "m", "max_tokens": 5,
                     "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"x-api-key": key, "content-type": "application/json",
             "anthropic-version": "2023-06-01"},
)
print(urllib.request.urlopen(request, timeout=20).read().decode())
try:
    urllib.request.urlopen("http://1.1.1.1/", timeout=3)
    print("NETWORK")
except OSError:
    print("no network")
sys.exit(7)
"""


@pytest.mark.parametrize("unsafe", [False, True], ids=["sandboxed", "unsandboxed"])
def test_a_bridged_command_reaches_the_proxy_and_exits_with_its_status(unsafe, tmp_path):
    if not unsafe and sandbox.sandbox_problem():
        pytest.skip(f"no sandbox here: {sandbox.sandbox_problem()}")
    folder = Path(tempfile.mkdtemp(prefix="evalsite-api-"))
    try:
        (tmp_path / "client.py").write_text(CLIENT)
        with FakeAnthropic([reply("hello")]) as api:
            proxy = ApiProxy(api_key="real", upstream=api.url, socket_path=folder / "api.sock")
            with proxy:
                lease = proxy.lease(max_calls=5, token_budget=10_000)
                argv, base = bridged(["python3", "client.py"], folder)
                argv = [*argv, base, lease.key]
                outcome = sandbox.run(
                    argv,
                    folder=tmp_path,
                    env=sandbox.allowed_environment(home=tmp_path),
                    ro_binds=[(folder, folder)],
                    unsafe=unsafe,
                )
            assert api.requests[0].headers["x-api-key"] == "real"
        lines = outcome.stdout.splitlines()
        assert json.loads(lines[0])["content"][0]["text"] == "hello"
        assert lease.tally.calls == 1
        if not unsafe:
            assert lines[1] == "no network"
        assert outcome.returncode == 7
    finally:
        shutil.rmtree(folder, ignore_errors=True)
