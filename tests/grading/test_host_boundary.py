"""The host never opens, follows or copies what an agent or a skill's author controls.

Each attack the issue saw, scripted: an agent's git filter that swaps the diff's output for a
link to the site's `.env`, a FIFO where the reflog was, a dangling link, a run that fills the
disk; a skill folder whose SKILL.md, fixtures, setup files or `files_root` reach host files,
or whose name climbs out of the workspace. Each must be contained and recorded, and the
campaign must finish with every run.
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from grading import sandbox
from grading.evaluating.claude_code.staging import stage_skill
from grading.evaluating.harness import AgentResult, AgentSettings, Dispatch
from grading.evaluating.plan import read_skill
from grading.evaluating.taskdir import build_template
from grading.graders.command import command_check
from grading.graders.diff import measure_diff
from grading.sandbox import hostfiles
from runs.models import Run
from tests.factories import write_json
from tests.fakeapi import FakeAnthropic, RecordedRequest, reply, tool_use

needs_sandbox = pytest.mark.skipif(
    sandbox.sandbox_problem() is not None, reason=f"no sandbox here: {sandbox.sandbox_problem()}"
)
SECRET = "marker-host-secret-0451"
SKILL_MD = "---\nname: {name}\ndescription: Use when testing.\n---\nBe good.\n"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "host-secret.txt"
    path.write_text(SECRET)
    return path


# --- hostfiles: the one way in ------------------------------------------------------------


def test_a_link_anywhere_on_the_way_is_refused_and_named(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "real" / "file.txt").write_text("fine")
    (root / "link.txt").symlink_to(secret)
    (root / "linked-dir").symlink_to(secret.parent)

    assert hostfiles.read(root, "real/file.txt", max_bytes=100).data == b"fine"
    with pytest.raises(hostfiles.UntrustedPath, match=r"link\.txt is a symbolic link; refused"):
        hostfiles.read(root, "link.txt", max_bytes=100)
    with pytest.raises(hostfiles.UntrustedPath, match=r"linked-dir is a symbolic link"):
        hostfiles.read(root, f"linked-dir/{secret.name}", max_bytes=100)
    for escaping in ("../host-secret.txt", "/etc/passwd", "a/../../x"):
        with pytest.raises(hostfiles.UntrustedPath):
            hostfiles.read(root, escaping, max_bytes=100)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    done = threading.Event()

    def read() -> None:
        with pytest.raises(hostfiles.UntrustedPath, match="is a FIFO"):
            hostfiles.read(tmp_path, "pipe", max_bytes=10)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5), "reading a FIFO blocked"


def test_a_read_is_capped_and_says_the_whole_size(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 5000)
    found = hostfiles.read(tmp_path, "big", max_bytes=100)
    assert (len(found.data), found.size, found.truncated) == (100, 5000, True)
    with pytest.raises(hostfiles.UntrustedPath, match="is 5000 bytes; a test file may be at most"):
        hostfiles.read_whole(tmp_path, "big", max_bytes=100, what="a test file")


def test_writing_replaces_a_link_and_never_writes_through_one(tmp_path: Path, secret: Path) -> None:
    task = tmp_path / "task"
    task.mkdir()
    (task / "out.txt").symlink_to(secret)
    (task / "sub").symlink_to(tmp_path)

    hostfiles.write(task, "out.txt", b"new")
    assert not (task / "out.txt").is_symlink() and (task / "out.txt").read_bytes() == b"new"
    assert secret.read_text() == SECRET
    with pytest.raises(hostfiles.UntrustedPath, match="sub is a symbolic link"):
        hostfiles.write(task, "sub/planted.txt", b"x")
    assert not (tmp_path / "planted.txt").exists()


def test_a_tree_copy_keeps_links_as_links_or_refuses_them_and_never_copies_a_fifo(
    tmp_path: Path, secret: Path
) -> None:
    source = tmp_path / "skill"
    (source / "refs").mkdir(parents=True)
    (source / "refs" / "guide.md").write_text("guide")
    (source / "key").symlink_to(secret)

    copied = hostfiles.copy_tree(source, tmp_path / "as-links", links="copy")
    assert copied == [PurePosixPath("key"), PurePosixPath("refs/guide.md")]
    assert os.readlink(tmp_path / "as-links" / "key") == str(secret)
    with pytest.raises(hostfiles.UntrustedPath, match="key is a symbolic link"):
        hostfiles.copy_tree(source, tmp_path / "refused")

    (source / "key").unlink()
    os.mkfifo(source / "pipe")
    with pytest.raises(hostfiles.UntrustedPath, match="pipe is a FIFO"):
        hostfiles.copy_tree(source, tmp_path / "fifo", links="copy")
    with pytest.raises(hostfiles.UntrustedPath, match="holds more than 1 entries"):
        hostfiles.copy_tree(
            source, tmp_path / "many", max_entries=1, skip=lambda p: p.name == "pipe"
        )


# --- the task folder after the agent --------------------------------------------------------

#: A git clean filter, run inside the sandbox by the diff's `git add`, that finds the scratch
#: folder git's output goes to (GIT_INDEX_FILE in its git's environment; git clears it for
#: the filter itself) and puts links to the host's `.env` where that output will be read.
SWAP_FILTER = r"""for e in /proc/[0-9]*/environ; do
  i=$(tr '\0' '\n' < "$e" 2>/dev/null | sed -n 's/^GIT_INDEX_FILE=//p'); [ -n "$i" ] && break
done
d=$(dirname "$i"); ln -sf /proc/self/cwd/.env "$d/patch"; ln -sf /proc/self/cwd/.env "$d/raw"
cat
"""
PLANT_FILTER = (
    f"cat > .git/swap.sh <<'EOF'\n{SWAP_FILTER}EOF\n"
    "git config filter.swap.clean 'sh .git/swap.sh' && echo '* filter=swap' > .gitattributes && "
)


def _task(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "app.py").write_text("print('hi')\n")
    task = tmp_path / "task"
    return task, build_template(
        task,
        [(tmp_path / "evals" / "app.py", PurePosixPath("app.py"))],
        evals_dir=tmp_path / "evals",
    )


def _in_sandbox(task: Path, script: str) -> None:
    done = sandbox.run(
        ["sh", "-c", script], folder=task, env=sandbox.allowed_environment(home=task)
    )
    assert done.returncode == 0, done.stderr


@needs_sandbox
def test_a_git_filter_that_swaps_the_diff_for_a_link_to_the_sites_env_is_named_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"  # where runevals runs: /proc/self/cwd/.env on the host
    site.mkdir()
    (site / ".env").write_text(f"SECRET_KEY={SECRET}\n")
    monkeypatch.chdir(site)
    task, baseline = _task(tmp_path)
    _in_sandbox(task, PLANT_FILTER + "echo changed > app.py")

    with pytest.raises(Exception) as info:
        measure_diff(task, baseline=baseline)

    assert "symbolic link" in str(info.value) and SECRET not in str(info.value)


@needs_sandbox
def test_a_fifo_for_the_reflog_and_a_dangling_link_for_the_index_neither_hang_nor_crash(
    tmp_path: Path,
) -> None:
    task, baseline = _task(tmp_path)
    _in_sandbox(
        task,
        "rm .git/logs/HEAD && mkfifo .git/logs/HEAD && rm .git/index && "
        "ln -s /nonexistent/index .git/index && echo changed >> app.py",
    )
    outcome: list[Any] = []
    worker = threading.Thread(
        target=lambda: outcome.append(_measure_or_error(task, baseline)), daemon=True
    )
    worker.start()
    worker.join(60)

    assert outcome, "measuring the diff hung"
    assert isinstance(outcome[0], str) or outcome[0].files_touched == 1


@needs_sandbox
@pytest.mark.parametrize(
    ("script", "limits"),
    [
        (
            "for i in $(seq 400); do head -c 1048576 /dev/zero > f$i; done",
            {"disk_bytes": 16 * 1024**2},
        ),
        (
            "mkdir d && cd d && i=0; while [ $i -lt 20000 ]; do : > $i; i=$((i+1)); done",
            {"disk_entries": 500},
        ),
        (  # unlinked but held open: no walk of the folder sees them
            'for i in 3 4 5 6 7 8 9; do eval "exec $i>f$i"; rm f$i; '
            "head -c 10485760 /dev/zero >&$i; done; sleep 30",
            {"disk_bytes": 16 * 1024**2},
        ),
    ],
    ids=["bytes", "files", "deleted-but-open"],
)
def test_a_command_that_passes_the_runs_disk_quota_is_stopped(
    tmp_path: Path, script: str, limits: dict[str, int]
) -> None:
    task = tmp_path / "task"
    task.mkdir()
    quota = sandbox.Limits(**limits)

    done = sandbox.run(
        ["sh", "-c", script], folder=task, env=sandbox.allowed_environment(home=task), limits=quota
    )

    assert done.limit == "disk_bytes", done
    assert "the run's disk quota" in sandbox.describe(done.limit, quota)
    written = sum(p.stat().st_size for p in task.rglob("*") if p.is_file())
    assert written < 300 * 1024**2  # stopped long before the 400 MiB it set out to write


def _measure_or_error(task: Path, baseline: str) -> Any:
    try:
        return measure_diff(task, baseline=baseline)
    except Exception as exc:
        return str(exc)


@needs_sandbox
def test_setup_files_linked_by_the_skills_author_are_refused(tmp_path: Path, secret: Path) -> None:
    evals = tmp_path / "skill" / "evals"
    (evals / "held").mkdir(parents=True)
    (evals / "held" / "test.sh").symlink_to(secret)
    (evals / "held-dir").symlink_to(secret.parent)
    task = tmp_path / "task"
    task.mkdir()

    for setup in (["held/test.sh"], ["held"], ["held-dir"]):
        verdict, _ = command_check(
            {"id": "c", "command": "cat held/test.sh", "setup_files": setup},
            task_dir=task,
            evals_dir=evals,
        )
        assert not verdict.passed and "symbolic link" in verdict.evidence, verdict.evidence
        assert SECRET not in verdict.evidence
    assert not any(task.rglob("*"))


# --- the skill folder, before anything runs ----------------------------------------------


def _skill(root: Path, *, name: str = "hostile", evals: Any = None) -> Path:
    skill = root / "hostile"
    (skill / "evals" / "fixtures").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD.format(name=name))
    (skill / "evals" / "fixtures" / "README.md").write_text("# Project\n")
    default = {
        "skill_name": name,
        "evals": [{"id": "e1", "prompt": "p", "expected_output": "x", "assertions": []}],
    }
    write_json(skill / "evals" / "evals.json", evals or default)
    return skill


def _dry_run(skill: Path) -> str:
    with pytest.raises(CommandError) as info:
        call_command("runevals", str(skill), "--dry-run", stdout=io.StringIO())
    assert info.value.returncode == 2
    message = str(info.value)
    assert "\n" not in message and SECRET not in message
    return message


def _one_eval(**case: Any) -> dict[str, Any]:
    return {
        "skill_name": "hostile",
        "evals": [{"id": "e1", "prompt": "p", "expected_output": "x", "assertions": [], **case}],
    }


@pytest.mark.django_db
def test_a_skill_folder_that_reaches_host_files_is_refused_in_one_line(
    tmp_path: Path, secret: Path, settings
) -> None:
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"

    skill = _skill(tmp_path / "a")
    (skill / "SKILL.md").unlink()
    (skill / "SKILL.md").symlink_to(secret)
    assert (
        _dry_run(skill)
        == f"{skill}/SKILL.md is a symbolic link; refused (never followed or opened)"
    )

    skill = _skill(tmp_path / "b", evals=_one_eval(files=["fixtures/key"]))
    (skill / "evals" / "fixtures" / "key").symlink_to(secret)
    assert "fixture file 'fixtures/key' is a symbolic link" in _dry_run(skill)

    skill = _skill(tmp_path / "c", evals=_one_eval(files=["fixtures/README.md"]))
    os.rename(skill / "evals" / "fixtures", tmp_path / "moved")
    (skill / "evals" / "fixtures").symlink_to(tmp_path / "moved")
    assert "fixtures is a symbolic link" in _dry_run(skill)

    for files_root in ("/etc", "../..", "fixtures/../.."):
        skill = _skill(
            tmp_path / f"d{len(files_root)}",
            evals=_one_eval(files=["passwd"], files_root=files_root),
        )
        assert "files_root" in _dry_run(skill)

    skill = _skill(tmp_path / "e")
    os.rename(skill / "evals", tmp_path / "evals-elsewhere")
    (skill / "evals").symlink_to(tmp_path / "evals-elsewhere")
    assert _dry_run(skill).endswith("evals is a symbolic link; refused (never followed)")
    assert not settings.EVALSITE_WORKSPACE_DIR.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["../../escaped", "..", ".worker", "a/b", "bad\u202ename"])
def test_a_skill_name_that_is_not_one_folder_is_refused_before_any_path_is_built(
    tmp_path: Path, settings, name: str
) -> None:
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    skill = _skill(tmp_path, name=json.dumps(name))

    message = _dry_run(skill)

    assert message.startswith(f"{skill}/SKILL.md: ") and "skill name" in message
    assert not settings.EVALSITE_WORKSPACE_DIR.exists() and not (tmp_path / "escaped").exists()


def test_staging_copies_a_skills_link_as_a_link_and_never_its_target(
    tmp_path: Path, secret: Path
) -> None:
    skill_dir = _skill(tmp_path)
    (skill_dir / "id_rsa").symlink_to(secret)
    env = tmp_path / "workspace" / "hostile" / "iteration-1" / "env-e1"
    build_template(env, [], evals_dir=env)
    dispatch = Dispatch(
        case={"prompt": "p"},
        env=env,
        skill=read_skill(skill_dir / "SKILL.md"),
        skill_dir=skill_dir,
        agent=AgentSettings(model="m"),
        client=None,
        result=AgentResult(),
    )

    staged = stage_skill(dispatch)

    assert staged is not None and (staged / "id_rsa").is_symlink()
    assert not (staged / "evals").exists()
    contents = [p.read_bytes() for p in staged.rglob("*") if p.is_file() and not p.is_symlink()]
    assert not [c for c in contents if SECRET.encode() in c]


# --- a whole campaign against a hostile agent ----------------------------------------------


@pytest.fixture
def hostile_site(tmp_path: Path, settings, monkeypatch: pytest.MonkeyPatch) -> Path:
    """runevals run from a site folder whose `.env` holds the secret (`/proc/self/cwd/.env`
    on the host), with its workspace in `tmp_path`."""
    site = tmp_path / "site"
    site.mkdir()
    (site / ".env").write_text(f"SECRET_KEY={SECRET}\n")
    monkeypatch.chdir(site)
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    settings.EVALSITE_API_MAX_RETRIES = 1
    return site


#: What each eval's agent runs in its task folder (the messages harness's Bash).
ATTACKS = {
    "filters": PLANT_FILTER
    + "echo changed > README.md && rm .git/logs/HEAD && mkfifo .git/logs/HEAD && echo planted",
    "dangling": "ln -sf /nonexistent/x .git/index; echo changed >> README.md; echo planted",
    "flood": "head -c 300000000 /dev/zero > big.bin; echo written",
}


@needs_sandbox
@pytest.mark.django_db
def test_a_hostile_agent_campaign_finishes_with_every_run_recorded_and_nothing_leaked(
    tmp_path: Path, settings, hostile_site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.EVALSITE_RUN_DISK_BYTES = 32 * 1024**2
    evals = {
        "skill_name": "hostile",
        "evals": [
            {
                "id": eval_id,
                "prompt": f"attack:{eval_id}",
                "expected_output": "Nothing leaks.",
                "files": ["fixtures/README.md"],
                "assertions": [
                    {"id": "small", "type": "diff_scope", "max_files_touched": 5},
                    {"id": "runs", "type": "command_check", "command": "true"},
                ],
            }
            for eval_id in ATTACKS
        ],
    }

    def agent(request: RecordedRequest) -> Any:
        if request.tool_results:
            return reply("Done.")
        eval_id = request.first_user_text.removeprefix("attack:")
        return reply(tool_use("Bash", {"command": ATTACKS[eval_id]}))

    with FakeAnthropic(agent) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "marker-anthropic-key")
        out = io.StringIO()
        call_command(
            "runevals", str(_skill(tmp_path, evals=evals)), "--harness", "messages", stdout=out
        )
        assert not api.errors, api.errors

    assert "6 runs (2 errored)" in out.getvalue()
    runs = {(r.eval_id, r.status) for r in Run.objects.all()}
    assert runs == {
        ("filters", "completed"),
        ("dangling", "completed"),
        ("flood", "errored"),
    }
    assert Run.objects.count() == 6
    errors = [
        json.loads(p.read_text()) for p in settings.EVALSITE_WORKSPACE_DIR.rglob("error.json")
    ]
    assert len(errors) == 2 and all("disk quota" in e["error"] for e in errors), errors
    for path in settings.EVALSITE_WORKSPACE_DIR.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert SECRET not in path.read_bytes().decode(errors="replace"), path
    dumped = io.StringIO()
    call_command("dumpdata", "runs", "grading", stdout=dumped)
    assert SECRET not in dumped.getvalue()
    filters = Run.objects.get(eval_id="filters", condition__name="with_skill")
    evidence = {r.assertion_id: r.evidence for r in filters.grading.results.all()}
    assert "symbolic link" in evidence["small"], evidence


@needs_sandbox
@pytest.mark.django_db
def test_the_real_cli_as_a_hostile_agent_and_a_skill_linked_to_a_host_secret_leak_nothing(
    cli: Path,
    tmp_path: Path,
    secret: Path,
    settings,
    hostile_site: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    evals = {
        "skill_name": "hostile",
        "evals": [
            {
                "id": "filters",
                "prompt": "attack:filters",
                "expected_output": "Nothing leaks.",
                "files": ["fixtures/README.md"],
                "assertions": [{"id": "small", "type": "diff_scope", "max_files_touched": 5}],
            }
        ],
    }
    skill = _skill(tmp_path, evals=evals)
    (skill / "id_rsa").symlink_to(secret)  # staged as a link the sandbox cannot resolve
    # The CLI asks before running a compound command, so the agent writes a script first.
    script = PLANT_FILTER + "echo changed > README.md; cat .claude/skills/hostile/id_rsa\n"

    def agent(request: RecordedRequest) -> Any:
        if request.forced_tool:
            return reply("no judge here")
        root = re.search(r"Primary working directory: ([^\s\\]+)", json.dumps(request.body))
        assert root, "the CLI's prompt names its working directory"
        steps = [
            tool_use("Write", {"file_path": f"{root.group(1)}/attack.sh", "content": script}),
            tool_use("Bash", {"command": "sh attack.sh"}),
        ]
        turn = request.assistant_turns
        return reply(steps[turn]) if turn < len(steps) else reply("Done.")

    with FakeAnthropic(agent) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "marker-anthropic-key")
        out = io.StringIO()
        call_command("runevals", str(skill), "--harness", "claude-code", stdout=out)
        assert not api.errors, api.errors

    assert "2 runs (0 errored)" in out.getvalue()
    for run in Run.objects.all():
        evidence = {r.assertion_id: r.evidence for r in run.grading.results.all()}
        assert "symbolic link" in evidence["small"], (evidence, run.tool_invocations)
    sent = json.dumps([r.body for r in api.requests])
    assert "No such file or directory" in sent and SECRET not in sent
    dumped = io.StringIO()
    call_command("dumpdata", "runs", "grading", stdout=dumped)
    assert SECRET not in dumped.getvalue()
    for path in settings.EVALSITE_WORKSPACE_DIR.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert SECRET not in path.read_bytes().decode(errors="replace"), path


def test_fixtures_cannot_configure_the_git_that_builds_the_task_folder(tmp_path: Path) -> None:
    evals = tmp_path / "evals"
    (evals / ".config" / "git").mkdir(parents=True)
    marker = tmp_path / "ran"
    config = (
        f'[filter "own"]\n\tclean = "touch {marker}; cat"\n[core]\n\tfsmonitor = "touch {marker}"\n'
    )
    (evals / ".gitconfig").write_text(config)
    (evals / ".config" / "git" / "config").write_text(config)
    (evals / ".gitattributes").write_text("* filter=own\n")
    (evals / "app.py").write_text("print('hi')\n")
    fixtures = [
        (evals / name, PurePosixPath(name))
        for name in (".gitconfig", ".config/git/config", ".gitattributes", "app.py")
    ]

    build_template(tmp_path / "task", fixtures, evals_dir=evals)

    assert not marker.exists()
