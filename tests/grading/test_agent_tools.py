"""The agent's tools: confined to the task folder, secrets stripped, output capped, every
argument checked, and nothing the agent does can hang or crash the run."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from grading import sandbox
from grading.evaluating.messages import tools
from grading.evaluating.messages.tools import MAX_TOOL_OUTPUT, TaskFolder, Toolbox, tool_definitions
from grading.graders.rustregex import compile_rust_bounded, compile_rust_regex


@pytest.fixture
def box(tmp_path: Path) -> Toolbox:
    task = tmp_path / "task"
    (task / "src").mkdir(parents=True)
    (task / "src" / "app.py").write_text("print('hi')\nvalue = 1\n")
    (tmp_path / "secret.txt").write_text("top secret")
    return Toolbox(TaskFolder(task), skills={"demo": "Skill body."})


@pytest.mark.parametrize(
    "path", ["../secret.txt", "src/../../secret.txt", "/etc/passwd", "{tmp}/secret.txt"]
)
def test_reading_outside_the_task_folder_is_refused(box: Toolbox, tmp_path: Path, path) -> None:
    output, is_error = box.run("Read", {"file_path": path.format(tmp=tmp_path)})

    assert is_error
    assert "is outside the working directory" in output
    assert "top secret" not in output


def test_a_symlink_pointing_out_is_refused(box: Toolbox, tmp_path: Path) -> None:
    (box.folder.root / "link.txt").symlink_to(tmp_path / "secret.txt")

    for tool, args in (
        ("Read", {"file_path": "link.txt"}),
        ("Write", {"file_path": "link.txt", "content": "x"}),
        ("Edit", {"file_path": "link.txt", "old_string": "top", "new_string": "x"}),
    ):
        output, is_error = box.run(tool, args)
        assert is_error and "outside the working directory" in output, tool
    assert (tmp_path / "secret.txt").read_text() == "top secret"
    assert "secret" not in box.run("Grep", {"pattern": "top secret"})[0].replace(
        "No matches found", ""
    )


def test_relative_and_absolute_paths_inside_both_work(box: Toolbox) -> None:
    absolute = str(box.folder.root / "src" / "app.py")

    assert "print('hi')" in box.run("Read", {"file_path": "src/app.py"})[0]
    assert "print('hi')" in box.run("Read", {"file_path": absolute})[0]
    assert box.run("Write", {"file_path": "new/notes.md", "content": "n"}) == (
        f"File written: {box.folder.root.resolve() / 'new' / 'notes.md'}",
        False,
    )
    assert (
        box.run(
            "Edit", {"file_path": absolute, "old_string": "value = 1", "new_string": "value = 2"}
        )[1]
        is False
    )
    assert "value = 2" in (box.folder.root / "src" / "app.py").read_text()


def test_glob_and_grep_stay_inside(box: Toolbox) -> None:
    assert box.run("Glob", {"pattern": "**/*.py"})[0].endswith("src/app.py")
    assert box.run("Glob", {"pattern": "*", "path": ".."})[1] is True
    assert (
        "app.py:2:value = 1" in box.run("Grep", {"pattern": "value", "output_mode": "content"})[0]
    )


def test_bash_runs_in_the_task_folder_without_secrets(
    box: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "ANTHROPIC_API_KEY": "sk-ant-secret",
        "SECRET_KEY": "django-secret",
        "DATABASE_URL": "postgres://u:p@h/db",
        "GITHUB_TOKEN": "ghp_secret",
        "AWS_SECRET_ACCESS_KEY": "aws-secret",
        "RELEASE_PAT": "pat-secret",
        "APP_CLIENT_ID": "id-secret",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)

    environs = "tr '\\0' '\\n' < /proc/1/environ; tr '\\0' '\\n' < /proc/$PPID/environ"
    output, is_error = box.run("Bash", {"command": f"pwd; env; {environs}"})

    assert not is_error, output
    assert output.splitlines()[0] == str(box.folder.root)
    for secret in secrets.values():
        assert secret not in output
    # /proc/<pid>/environ shows a process's environment as it started: runevals' own.
    with open("/proc/self/environ", "rb") as environ:
        started_with = environ.read().decode(errors="replace").split("\0")
    allowed = ("PATH=", "HOME=", "LANG=", "LC_ALL=", "TERM=", "TZ=", "PWD=", "SHLVL=", "_=")
    assert not [e for e in started_with if "=" in e and not e.startswith(allowed) and e in output]
    assert "PATH=" in output and f"HOME={box.folder.root}" in output


def test_bash_times_out_and_reports_failures(box: Toolbox) -> None:
    output, is_error = box.run("Bash", {"command": "sleep 5", "timeout": 200})
    assert is_error and "timed out after 0.2 s" in output

    output, is_error = box.run("Bash", {"command": "echo oops >&2; exit 3"})
    assert "oops" in output and output.endswith("Exit code 3")


def test_output_sent_back_is_capped(box: Toolbox) -> None:
    output, _ = box.run(
        "Bash", {"command": f"head -c {MAX_TOOL_OUTPUT * 2} /dev/zero | tr '\\0' a"}
    )

    assert len(output) < MAX_TOOL_OUTPUT + 100
    assert output.endswith(f"[{MAX_TOOL_OUTPUT} more characters not shown]")


def test_the_skill_tool_returns_the_body_and_only_where_offered(box: Toolbox, tmp_path) -> None:
    assert box.run("Skill", {"skill": "demo"}) == ("Skill body.", False)
    assert box.run("Skill", {"skill": "plugin:demo"}) == ("Skill body.", False)
    assert box.run("Skill", {"skill": "other"})[1] is True
    plain = Toolbox(TaskFolder(tmp_path))
    assert plain.run("Skill", {"skill": "demo"}) == ("No such tool: Skill", True)
    assert "Skill" not in [t["name"] for t in tool_definitions(with_skill=False)]
    assert os.path.isdir(tmp_path)


def test_bash_leaves_nothing_running_behind(box: Toolbox) -> None:
    output, is_error = box.run("Bash", {"command": "sleep 300.25 & echo started"})

    assert (output, is_error) == ("started\n", False)
    assert not _running("sleep\x00300.25")


def test_bash_output_floods_are_truncated_and_limits_are_tool_errors(tmp_path: Path) -> None:
    box = Toolbox(
        TaskFolder(tmp_path), limits=sandbox.Limits(output_bytes=10_000, max_processes=10)
    )

    output, is_error = box.run("Bash", {"command": "yes | head -c 50000000"})
    assert not is_error
    assert output.endswith("[output truncated: only the first 10000 bytes were kept]")

    output, is_error = box.run("Bash", {"command": "for i in $(seq 50); do sleep 5 & done; wait"})
    assert is_error
    assert output == "Command stopped by the sandbox: it started more than 10 processes"


def test_bash_raises_when_the_sandbox_cannot_run(
    box: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not a tool error: the agent did nothing wrong, and a run without its commands is void.
    monkeypatch.setattr(sandbox, "sandbox_problem", lambda: "bubblewrap (bwrap) is not installed")
    with pytest.raises(sandbox.SandboxUnavailable):
        box.run("Bash", {"command": "true"})


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        (
            "Read",
            {"file_path": "src/app.py", "offset": "abc"},
            "offset must be an integer, not 'abc'",
        ),
        ("Read", {"file_path": "src/app.py", "offset": -1}, "offset must be at least 0, not -1"),
        ("Read", {"file_path": "src/app.py", "limit": 0}, "limit must be at least 1, not 0"),
        ("Read", {"file_path": "src/app.py", "limit": True}, "limit must be an integer, not True"),
        ("Read", {"file_path": 42}, "file_path must be a string, not int"),
        ("Read", {"file_path": "src/app\x00.py"}, "file_path contains a NUL character"),
        ("Write", {"file_path": "a.txt", "content": 5}, "content must be a string, not int"),
        ("Write", {"file_path": "a\x00.txt", "content": ""}, "file_path contains a NUL character"),
        (
            "Edit",
            {"file_path": "src/app.py", "old_string": "1", "new_string": "2", "replace_all": "y"},
            "replace_all must be true or false, not 'y'",
        ),
        (
            "Edit",
            {"file_path": "src/app.py", "old_string": None, "new_string": "2"},
            "old_string is required",
        ),
        ("Glob", {"pattern": ["*"]}, "pattern must be a string, not list"),
        ("Glob", {"pattern": "*", "path": "\x00"}, "path contains a NUL character"),
        ("Grep", {"pattern": "x", "output_mode": "all"}, "output_mode must be one of"),
        ("Grep", {"pattern": "x", "-i": "yes"}, "-i must be true or false, not 'yes'"),
        ("Grep", {"pattern": "(?=x)"}, "invalid regular expression: lookaround"),
        ("Grep", {"pattern": "x", "glob": 3}, "glob must be a string, not int"),
        ("Bash", {"command": "true", "timeout": "abc"}, "timeout must be a positive number"),
        ("Bash", {"command": "true", "timeout": -5}, "timeout must be a positive number"),
        ("Bash", {"command": "echo \x00"}, "command contains a NUL character"),
        ("Skill", {"skill": ["demo"]}, "skill must be a string, not list"),
    ],
)
def test_every_argument_is_checked(box: Toolbox, tool: str, args: dict, message: str) -> None:
    output, is_error = box.run(tool, args)

    assert is_error
    assert output.startswith(message)


def test_fifos_sockets_and_large_files_are_refused_without_blocking(box: Toolbox) -> None:
    root = box.folder.root
    os.mkfifo(root / "pipe")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(root / "sock"))
    with open(root / "big.log", "wb") as big:
        big.truncate(tools.MAX_FILE_BYTES + 1)
    started = time.monotonic()

    for tool, args in (
        ("Read", {"file_path": "pipe"}),
        ("Read", {"file_path": "sock"}),
        ("Write", {"file_path": "pipe", "content": "x"}),
        ("Edit", {"file_path": "pipe", "old_string": "a", "new_string": "b"}),
    ):
        output, is_error = box.run(tool, args)
        assert is_error, (tool, args)
        assert "not a regular file" in output or "ENXIO" in output or "No such device" in output
    output, is_error = box.run("Read", {"file_path": "big.log"})
    assert is_error and f"the file tools read files up to {tools.MAX_FILE_BYTES} bytes" in output
    assert box.run("Grep", {"pattern": "value"})[0].endswith("src/app.py")  # FIFO skipped
    assert time.monotonic() - started < 5
    listener.close()


def test_grep_takes_rust_syntax_and_cannot_hang(
    box: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tools, "SEARCH_SECONDS", 0.3)
    (box.folder.root / "long.txt").write_text("a" * 5000 + "b\n")
    started = time.monotonic()

    output, is_error = box.run("Grep", {"pattern": "(a+)+$", "path": "long.txt"})

    assert time.monotonic() - started < 5
    assert is_error
    assert output.startswith("Grep stopped after 0.3 s in ")
    # Rust's `$` is the end of the line, as ripgrep matches it.
    assert "app.py:2:value = 1" in box.run("Grep", {"pattern": r"\d$", "output_mode": "content"})[0]


def test_glob_and_grep_stop_at_their_budget_with_partial_results(
    box: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tools, "MAX_FILES_VISITED", 3)
    for n in range(6):
        (box.folder.root / f"f{n}.txt").write_text("hit\n")

    globbed, is_error = box.run("Glob", {"pattern": "*.txt"})
    grepped, _ = box.run("Grep", {"pattern": "hit"})

    assert not is_error
    assert globbed.endswith("[search stopped after 3 files: results are partial]")
    assert grepped.endswith("[search stopped after 3 files: results are partial]")
    assert len(globbed.splitlines()) == 4


def test_any_exception_inside_a_tool_is_a_tool_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Toolbox, args: dict) -> str:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(Toolbox, "_glob", broken)

    assert Toolbox(TaskFolder(tmp_path)).run("Glob", {"pattern": "*"}) == (
        "RecursionError: maximum recursion depth exceeded",
        True,
    )


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (r"\d+ passed$", "3 passed\n"),
        (r"\d+ passed$", "3 passed"),
        (r"(?i)hello\s+world", "HELLO  World"),
        (r"a(?i)b|c", "aB"),
        (r"[[:alpha:]]+\b{end}", "abc1"),
        (r"\x{41}\u{1F600}", "A😀"),
        (r"(?x) a b # comment", "ab"),
        (r"(a+)+z", "aaaz"),
    ],
)
def test_the_bounded_engine_matches_what_the_rust_translation_matches(
    pattern: str, text: str
) -> None:
    expected = compile_rust_regex(pattern).search(text)
    found = compile_rust_bounded(pattern).search(text, timeout=1)
    assert (found and found.group(0)) == (expected and expected.group(0))


def _running(marker: str) -> bool:
    """Whether a process whose NUL-joined command line contains `marker` runs on the host."""
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if marker.encode() in cmdline.read():
                    return True
        except OSError:
            continue
    return False
