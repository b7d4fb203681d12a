"""The sandbox around everything an agent or an eval's command runs (grading/sandbox/).

Each test runs a real command in a real bubblewrap sandbox and checks, from the host, what it
could see, touch and leave behind.
"""

from __future__ import annotations

import os
import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grading import sandbox
from grading.sandbox import Limits, allowed_environment, bwrap, kill_tree, run, spawn

PROJECT = Path(__file__).resolve().parents[2]
SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-marker-1",
    "SECRET_KEY": "django-marker-2",
    "DATABASE_URL": "postgres://marker-3@db/site",
    "AWS_SECRET_ACCESS_KEY": "aws-marker-4",
    "GITHUB_TOKEN": "ghp_marker-5",
    "DEPLOY_PAT": "pat-marker-6",
    "AWS_ACCESS_KEY_ID": "id-marker-7",
}

needs_bwrap = pytest.mark.skipif(
    sandbox.sandbox_problem() is not None, reason=f"no sandbox here: {sandbox.sandbox_problem()}"
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    task = tmp_path / "task"
    task.mkdir()
    (task / "README.md").write_text("hello\n")
    return task


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    return SECRETS


def sh(command: str, folder: Path, **options) -> sandbox.Outcome:
    return run(
        ["sh", "-c", command], folder=folder, env=allowed_environment(home=folder), **options
    )


def running(marker: str) -> list[int]:
    """Host PIDs whose NUL-joined command line contains `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if marker.encode() in cmdline.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def test_the_environment_is_an_allow_list(secrets: dict[str, str], tmp_path: Path) -> None:
    env = allowed_environment({"MODE": "strict"}, home=tmp_path)

    assert set(env) <= {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "MODE"}
    assert env["HOME"] == str(tmp_path) and env["MODE"] == "strict"
    with pytest.raises(ValueError, match="NUL"):
        allowed_environment({"X": "a\0b"}, home=tmp_path)


@needs_bwrap
def test_no_process_in_the_sandbox_shows_a_secret(secrets: dict[str, str], folder: Path) -> None:
    done = sh(
        "env; for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done; "
        "tr '\\0' '\\n' < /proc/$PPID/environ; ls /proc | grep -c '^[0-9]'",
        folder,
    )

    assert done.returncode == 0, done
    for value in secrets.values():
        assert value not in done.stdout
    # Its own shell, the reaper at PID 1, `ls` and `grep` (and `tr` done): nothing of the host.
    assert int(done.stdout.split()[-1]) <= 6
    assert f"HOME={folder}" in done.stdout.splitlines()


@needs_bwrap
def test_nothing_outside_the_task_folder_is_visible(folder: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("marker-secret")
    done = sh(
        f"cat ../secret.txt {tmp_path}/secret.txt {PROJECT}/manage.py {PROJECT}/db.sqlite3;"
        f" ls {PROJECT} /home /root/.ssh /opt /var/lib; cat /etc/shadow; cat README.md",
        folder,
    )

    assert "marker-secret" not in done.stdout and "django" not in done.stdout
    assert done.stderr.count("No such file or directory") == 10, done.stderr
    assert done.stdout == "hello\n"  # the task folder itself is there


@needs_bwrap
def test_the_task_folder_is_the_only_writable_place(folder: Path, tmp_path: Path) -> None:
    marker = f"evalsite-outside-{os.getpid()}"
    done = sh(
        f"for p in /{marker} /usr/{marker} /etc/{marker} /root/{marker}; do "
        f"echo x > $p || echo refused $p; done; echo x > ../{marker}; echo x > /tmp/{marker}; "
        f"echo x > {tmp_path}/{marker}; echo x > made.txt",
        folder,
    )

    assert done.stdout.count("refused") == 4, done
    assert (folder / "made.txt").read_text() == "x\n"
    # The task folder's parents (here under /tmp) and /tmp itself were the sandbox's own.
    assert not (tmp_path / marker).exists()
    assert not Path(f"/tmp/{marker}").exists()


@needs_bwrap
def test_there_is_no_network_unless_asked(folder: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    connect = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\""
    try:
        done = sh(connect, folder)
        assert done.returncode != 0
        assert "Errno" in done.stderr
        with pytest.raises(BlockingIOError):
            listener.accept()

        assert sh(connect, folder, network=True).returncode == 0  # the test can tell
        listener.accept()[0].close()
    finally:
        listener.close()


@needs_bwrap
def test_no_capabilities_and_python_is_there(folder: Path) -> None:
    done = sh("grep CapEff /proc/self/status; python3 -c 'print(6 * 7)'; id -u", folder)

    assert done.stdout.splitlines()[0].split() == ["CapEff:", "0000000000000000"]
    assert done.stdout.splitlines()[1] == "42"


@needs_bwrap
@pytest.mark.parametrize("unsafe", [False, True], ids=["sandboxed", "unsafe"])
def test_background_processes_die_with_the_command(folder: Path, unsafe: bool) -> None:
    marker = f"300.{os.getpid()}{int(unsafe)}"
    done = sh(f"sleep {marker} & sleep {marker} & echo started", folder, unsafe=unsafe)

    assert done.stdout == "started\n"
    assert running(f"sleep\0{marker}") == []


@needs_bwrap
def test_an_output_flood_is_read_in_bounded_chunks_and_truncated(folder: Path) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    done = sh("yes | head -c 300000000", folder)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before

    assert done.returncode == 0
    assert done.output_truncated
    assert len(done.stdout) == Limits().output_bytes
    assert grown_kib < 100 * 1024  # 300 MB went through; under 100 MB of it ever stayed


@needs_bwrap
def test_wall_time_kills_the_whole_namespace(folder: Path) -> None:
    marker = f"30.{os.getpid()}7"
    started = time.monotonic()
    done = sh(
        f"echo begun; sleep {marker} & sleep {marker}", folder, limits=Limits(wall_seconds=0.5)
    )

    assert time.monotonic() - started < 5
    assert (done.returncode, done.timed_out, done.limit) == (None, True, "wall_seconds")
    assert done.stdout == "begun\n"  # what it said before is kept
    assert running(f"sleep\0{marker}") == []


@needs_bwrap
def test_memory_cpu_file_and_process_limits_stop_a_command(folder: Path) -> None:
    allocate = "python3 -c 'b = bytearray(512 * 1024**2); print(len(b))'"
    small = Limits(memory_bytes=256 * 1024**2)
    assert sh(allocate, folder, limits=small).limit == "memory_bytes"
    assert sh(allocate, folder).stdout == f"{512 * 1024**2}\n"  # the limit, not python, stops it

    spin = sh("while :; do :; done", folder, limits=Limits(cpu_seconds=1, wall_seconds=30))
    assert spin.limit == "cpu_seconds"

    big = sh("head -c 2000000 /dev/zero > big", folder, limits=Limits(file_bytes=1_000_000))
    assert big.limit == "file_bytes"
    assert (folder / "big").stat().st_size == 1_000_000

    started = time.monotonic()
    fork = sh(
        "for i in $(seq 100); do sleep 5 & done; wait", folder, limits=Limits(max_processes=20)
    )
    assert (fork.limit, fork.returncode) == ("max_processes", None)
    assert time.monotonic() - started < 4


@needs_bwrap
def test_the_scratch_folders_are_size_limited(folder: Path) -> None:
    done = sh(
        "head -c 3000000 /dev/zero > /tmp/fill; echo $?", folder, limits=Limits(tmp_bytes=1_000_000)
    )

    assert "No space left on device" in done.stderr
    assert done.stdout == "1\n"


@needs_bwrap
def test_stdin_is_fed_and_exit_codes_come_back(folder: Path) -> None:
    done = run(
        ["sh", "-c", "read line; echo got $line; exit 3"],
        folder=folder,
        env=allowed_environment(home=folder),
        stdin=b"input\n",
    )

    assert (done.returncode, done.stdout) == (3, "got input\n")
    assert sh("kill -9 $$", folder).returncode == 137  # 128 + SIGKILL, as a shell says


@needs_bwrap
def test_a_sandbox_that_cannot_be_set_up_raises(folder: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(sandbox.SandboxUnavailable, match="Can't find source path"):
        sh("true", folder, ro_binds=[(missing, missing)])


def test_without_bwrap_it_refuses_in_one_line(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bwrap.shutil, "which", lambda name: None)
    monkeypatch.setattr(bwrap.os, "access", lambda path, mode: False)
    for cached in (bwrap._bwrap, bwrap._bwrap_options, bwrap.sandbox_problem):
        cached.cache_clear()
    try:
        problem = sandbox.sandbox_problem()
        assert problem == "bubblewrap (bwrap) is not installed (apt-get install bubblewrap)"
        with pytest.raises(sandbox.SandboxUnavailable) as info:
            sh("true", folder)
        assert str(info.value) == problem
    finally:
        monkeypatch.undo()
        for cached in (bwrap._bwrap, bwrap._bwrap_options, bwrap.sandbox_problem):
            cached.cache_clear()


def test_unsafe_runs_bare_but_keeps_the_limits(
    secrets: dict[str, str], folder: Path, tmp_path: Path
) -> None:
    (tmp_path / "secret.txt").write_text("marker-secret")

    seen = sh("cat ../secret.txt; env", folder, unsafe=True)
    assert seen.stdout.startswith("marker-secret")  # no isolation: that is what unsafe means
    assert not any(value in seen.stdout for value in secrets.values())  # the env is still clean
    slow = sh("sleep 30", folder, unsafe=True, limits=Limits(wall_seconds=0.3))
    assert (slow.timed_out, slow.limit) == (True, "wall_seconds")
    flood = sh("yes | head -c 5000000", folder, unsafe=True, limits=Limits(output_bytes=1000))
    assert flood.output_truncated and len(flood.stdout) == 1000


def test_the_command_line_is_a_sandbox(folder: Path) -> None:
    if bwrap._bwrap() is None:
        pytest.skip("bwrap is not installed")
    argv = sandbox.sandboxed_argv(["true"], folder=folder, env={"HOME": str(folder)})
    for option in ("--die-with-parent", "--unshare-pid", "--unshare-net", "--new-session"):
        assert option in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert argv[argv.index("--bind") + 1 : argv.index("--bind") + 3] == [str(folder)] * 2
    assert ["--clearenv", "--setenv", "HOME", str(folder)] == argv[-6:-2]
    assert str(PROJECT) not in argv and "/etc" not in argv and "/etc/shadow" not in argv
    assert "--unshare-net" not in sandbox.sandboxed_argv(["true"], folder=folder, network=True)


@pytest.fixture
def spawned() -> Iterator[list[sandbox.SandboxedProcess]]:
    processes: list[sandbox.SandboxedProcess] = []
    yield processes
    for process in processes:
        kill_tree(process)


@needs_bwrap
def test_a_spawned_process_is_killed_with_everything_it_started(
    folder: Path, spawned: list
) -> None:
    marker = f"300.{os.getpid()}9"
    process = spawn(
        ["sh", "-c", f"sleep {marker} & echo ready; sleep {marker}"],
        folder=folder,
        env=allowed_environment(home=folder),
        limits=Limits(),
    )
    spawned.append(process)
    assert process.stdout is not None and process.stdout.readline() == b"ready\n"
    deadline = time.monotonic() + 5
    while len(running(f"sleep\0{marker}")) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # the second sleep starts after `ready`
    assert len(running(f"sleep\0{marker}")) == 2

    kill_tree(process)

    assert process.poll() is not None
    assert running(f"sleep\0{marker}") == []


@needs_bwrap
def test_a_spawned_process_is_stopped_at_its_wall_time(folder: Path, spawned: list) -> None:
    process = spawn(
        ["sleep", "30"],
        folder=folder,
        env=allowed_environment(home=folder),
        limits=Limits(wall_seconds=0.3),
        stderr=-3,  # subprocess.DEVNULL
    )
    spawned.append(process)

    process.wait(timeout=5)

    assert process.limit == "wall_seconds"
