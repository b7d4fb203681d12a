"""`runevals` against an agent that tries to escape: every attempt the issue saw, scripted.

The agent's calls go through the real runner, harness, tools and graders, with the fake
Messages API; each attempt must be contained and come back as a tool result or tool error,
the iteration must complete, and no secret may reach the workspace, the database or the API.
"""

from __future__ import annotations

import io
import json
import os
import resource
import socket
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from grading import sandbox
from grading.evaluating.messages import tools
from grading.evaluating.plan import PlanError, check_folder_names
from runs.models import Run
from tests.factories import write_json
from tests.fakeapi import FakeAnthropic, RecordedRequest, reply, tool_use

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        sandbox.sandbox_problem() is not None,
        reason=f"no sandbox here: {sandbox.sandbox_problem()}",
    ),
]

PROJECT = Path(__file__).resolve().parents[2]
MARKERS = {
    "SECRET_KEY": "marker-django-secret-key",
    "ANTHROPIC_API_KEY": "marker-anthropic-api-key",
    "DATABASE_URL": "postgres://marker-user:marker-password@db/site",
    "AWS_SECRET_ACCESS_KEY": "marker-aws-secret",
    "AWS_ACCESS_KEY_ID": "marker-aws-key-id",
    "DEPLOY_PAT": "marker-deploy-pat",
    "GITHUB_TOKEN": "marker-github-token",
}
OUTSIDE = f"outside-escape-{os.getpid()}"
ENVIRONS = "tr '\\0' '\\n' < /proc/1/environ; tr '\\0' '\\n' < /proc/$PPID/environ"
#: Names a sandboxed shell sets for itself, or that the sandbox passes on by design.
OWN_VARIABLES = {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "PWD", "OLDPWD", "SHLVL", "_"}


def host_environment() -> list[str]:
    """`NAME=value` of this process's environment as the kernel shows it in
    /proc/<pid>/environ (what the agent read), where the value is distinctive enough."""
    with open("/proc/self/environ", "rb") as environ:
        entries = environ.read().decode(errors="replace").split("\0")
    return [
        entry
        for entry in entries
        if "=" in entry
        and entry.split("=", 1)[0] not in OWN_VARIABLES
        and len(entry.split("=", 1)[1]) >= 8
    ]


def make_skill(root: Path, evals: Any) -> Path:
    skill = root / "escapist"
    (skill / "evals" / "fixtures").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: escapist\ndescription: Use when testing.\n---\nBe good.\n", encoding="utf-8"
    )
    (skill / "evals" / "fixtures" / "README.md").write_text("# Project\n")
    write_json(skill / "evals" / "evals.json", evals)
    return skill


def runevals(*args: str) -> tuple[str, str]:
    """runevals with the messages harness, whose tool calls the fake API scripts (where
    the claude-code harness is installed it is the default)."""
    harness = ["--harness", "messages"] if "--harness" in _runevals_options() else []
    out, err = io.StringIO(), io.StringIO()
    call_command("runevals", *args, *harness, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _runevals_options() -> set[str]:
    from grading.management.commands.runevals import Command

    return set(Command().create_parser("manage.py", "runevals")._option_string_actions)


@pytest.fixture
def workspace(tmp_path: Path, settings) -> Path:
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    settings.EVALSITE_API_MAX_RETRIES = 1
    settings.EVALSITE_API_TIMEOUT = 30
    return settings.EVALSITE_WORKSPACE_DIR


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    with FakeAnthropic(lambda request: reply("Done.")) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        for name, value in MARKERS.items():
            monkeypatch.setenv(name, value)
        yield fake
    assert not fake.errors, fake.errors


@pytest.fixture
def listener():
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    yield server
    server.close()


def attempts(tmp_path: Path, port: int, api_url: str) -> list[tuple[str, dict[str, Any]]]:
    secret = tmp_path / "outside-secret.txt"
    return [
        (
            "Bash",
            {"command": f"{ENVIRONS}; env"},
        ),
        (
            "Bash",
            {
                "command": f"cat {PROJECT}/db.sqlite3 {PROJECT}/.env {PROJECT}/manage.py {secret}; "
                "ls -a ~/.ssh /root/.ssh"
            },
        ),
        (
            "Bash",
            {"command": "; ".join(f"echo x > {p}{OUTSIDE}" for p in ("/tmp/", "../../", "/"))},
        ),
        (
            "Bash",
            {
                "command": f"curl -sS --max-time 2 http://127.0.0.1:{port}/; "
                f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\"; "
                f"curl -sS --max-time 2 {api_url}/v1/messages"
            },
        ),
        ("Bash", {"command": "sleep 300.4242 & echo started"}),
        ("Bash", {"command": "yes | head -c 300000000"}),
        ("Read", {"file_path": "fixtures/README.md", "offset": "abc"}),
        ("Read", {"file_path": "fixtures/READ\0ME.md"}),
        ("Bash", {"command": "mkfifo pipe"}),
        ("Read", {"file_path": "pipe"}),
        ("Write", {"file_path": "long.txt", "content": "a" * 5000 + "b\n"}),
        ("Grep", {"pattern": "(a+)+$", "path": "long.txt"}),
        ("Grep", {"pattern": "Project"}),
        ("Glob", {"pattern": "**/*"}),
    ]


def test_every_escape_is_contained_and_the_iteration_completes(
    tmp_path: Path,
    workspace: Path,
    api: FakeAnthropic,
    listener: socket.socket,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tools, "SEARCH_SECONDS", 0.5)
    (tmp_path / "outside-secret.txt").write_text("marker-outside-file")
    script = attempts(tmp_path, listener.getsockname()[1], api.url)

    def escapist(request: RecordedRequest) -> Any:
        if request.tool_results:
            return reply("Done.")
        return reply(*(tool_use(name, args) for name, args in script))

    api.script = escapist
    evals = {
        "skill_name": "escapist",
        "evals": [
            {
                "id": "escapes",
                "prompt": "Try to get out.",
                "expected_output": "Nothing gets out.",
                "files": ["fixtures/README.md"],
                "assertions": [
                    {
                        "id": "grader-escape",
                        "type": "command_check",
                        "command": "tr '\\0' '\\n' < /proc/1/environ; env; "
                        f"cat {PROJECT}/manage.py; test ! -e {PROJECT}/manage.py",
                    }
                ],
            }
        ],
    }
    memory_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    output, _ = runevals(str(make_skill(tmp_path, evals)), "--concurrency", "2")

    assert "2 runs (0 errored)" in output
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - memory_before < 150 * 1024
    last = [r for r in api.message_requests if r.tool_results]
    assert len(last) == 2  # each run got every result back and finished
    results = [(b["content"], b.get("is_error", False)) for b in last[0].tool_results]
    assert len(results) == len(script)
    by_step = dict(zip([f"{n}:{json.dumps(a)[:40]}" for n, a in script], results, strict=True))
    environ, files, writes, network, background, flood, *_ = results
    read_abc, read_nul, _, read_fifo, _, grep_slow, grep_all, glob = results[6:]

    assert "PATH=" in environ[0] and "marker" not in environ[0], by_step
    assert files[0].count("No such file or directory") == 6
    assert "marker-outside-file" not in files[0]
    # / is read-only; /tmp, and here the workspace's parents under it, are the sandbox's own.
    assert writes[0].count("Read-only file system") == 1
    assert not (workspace / "escapist" / OUTSIDE).exists()
    assert not Path("/tmp", OUTSIDE).exists()
    assert "Exit code" in network[0] and "Errno" in network[0]
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing ever connected to the host's port
    assert background == ("started\n", False)
    assert not _running(b"sleep\x00300.4242")
    assert flood[0].endswith("more characters not shown]")  # 1 MiB kept, 30 000 chars sent
    assert read_abc == ("offset must be an integer, not 'abc'", True)
    assert read_nul == ("file_path contains a NUL character", True)
    assert read_fifo[1] and "not a regular file" in read_fifo[0]
    assert grep_slow[1] and grep_slow[0].startswith("Grep stopped after 0.5 s")
    assert not grep_all[1] and grep_all[0].endswith("fixtures/README.md")
    assert not glob[1] and "long.txt" in glob[0]

    command_check = json.loads(
        next(workspace.rglob("command-checks/grader-escape.json")).read_text()
    )
    assert command_check["passed"] is True, command_check  # manage.py was not there
    assert Run.objects.filter(status="completed").count() == 2

    leaks = [*MARKERS.values(), "marker-outside-file", *host_environment()]
    for path in workspace.rglob("*"):
        if path.is_file():
            content = path.read_bytes().decode(errors="replace")
            assert not [leak for leak in leaks if leak in content], path
    dumped = io.StringIO()
    call_command("dumpdata", "runs", "grading", stdout=dumped)
    assert not [leak for leak in leaks if leak in dumped.getvalue()]
    sent = json.dumps([r.body for r in api.requests])
    assert not [leak for leak in leaks if leak in sent]


def test_an_eval_id_that_escapes_its_folder_is_refused_before_any_api_call(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    # skill-creator's dialect takes any string id; eval-magic's schema would refuse it first.
    evals = [{"id": "../../escape", "prompt": "p", "expected_output": "x", "expectations": ["a"]}]
    skill = make_skill(tmp_path, evals)

    for extra in ([], ["--dry-run"]):
        with pytest.raises(CommandError) as info:
            runevals(str(skill), *extra)
        assert info.value.returncode == 2
        assert str(info.value) == (
            f"{skill}/evals/evals.json: eval id '../../escape' contains '/'; "
            "it must be usable as a folder name"
        )
    assert api.requests == []
    assert not workspace.exists() and not (tmp_path / "escape").exists()


@pytest.mark.parametrize(
    ("eval_ids", "conditions", "runs", "message"),
    [
        (["ok"], ["../x"], 1, "condition name '../x' contains '/'"),
        (["ok"], [".."], 1, "condition name '..' is '.' or '..'"),
        (["ok"], ["with_skill "], 1, "condition name 'with_skill ' begins or ends"),
        (["a\0b"], ["with_skill"], 1, "eval id 'a\\x00b' contains a control character"),
        (["é" * 150], ["with_skill"], 1, "is too long for the folder name 'eval-ééé"),
        (["x" * 200], ["without_skill" * 4], 10, "is too long for the folder name 'env-xxx"),
    ],
)
def test_names_that_cannot_be_folders_are_refused(
    eval_ids: list[str], conditions: list[str], runs: int, message: str
) -> None:
    with pytest.raises(PlanError, match="^evals.json: ") as info:
        check_folder_names(eval_ids=eval_ids, conditions=conditions, runs=runs)
    assert message in str(info.value)
    check_folder_names(eval_ids=["x" * 200], conditions=["without_skill"], runs=1)


def test_without_a_sandbox_runevals_refuses_to_start_in_one_line(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grading.campaigns import options

    monkeypatch.setattr(options, "sandbox_problem", lambda: "bubblewrap (bwrap) is not installed")
    skill = make_skill(tmp_path, [{"id": 1, "prompt": "p", "expectations": ["a"]}])

    with pytest.raises(CommandError) as info:
        runevals(str(skill))

    assert info.value.returncode == 2
    assert str(info.value) == (
        "cannot sandbox agents' commands here: bubblewrap (bwrap) is not installed; "
        "pass --unsafe-no-sandbox to run them without the sandbox"
    )
    assert api.requests == [] and not workspace.exists()


def test_unsafe_no_sandbox_runs_bare_and_says_so(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    api.script = lambda request: (
        reply("Done.")
        if request.tool_results or request.forced_tool
        else reply(tool_use("Bash", {"command": f"head -c 14 {PROJECT}/manage.py"}))
    )
    skill = make_skill(tmp_path, [{"id": 1, "prompt": "p", "expectations": ["a"]}])

    _, err = runevals(str(skill), "--unsafe-no-sandbox", "--only", "1")

    assert err.splitlines()[0].startswith("runevals: --unsafe-no-sandbox: agents' commands")
    outputs = {r.tool_results[0]["content"] for r in api.message_requests if r.tool_results}
    assert outputs == {"#!/usr/bin/env"}  # the project folder was in reach
    assert not sandbox.is_unsandboxed()  # only for that invocation


def _running(marker: bytes) -> bool:
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if marker in cmdline.read():
                    return True
        except OSError:
            continue
    return False
