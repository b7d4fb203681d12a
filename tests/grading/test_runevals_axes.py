"""`runevals --harness a,b --model x,y`: one campaign and one iteration per combination,
against the fake Messages API (the messages harness needs no CLI)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from grading.campaigns.models import Campaign
from grading.evaluating import registry
from runs.models import Iteration
from runs.reading.axes import skill_axes
from tests.fakeapi import FakeAnthropic
from tests.grading.campaigns.conftest import celery_here  # noqa: F401 (a fixture)

from .test_runevals import make_skill

pytestmark = pytest.mark.django_db


def runevals(*args: str, err: io.StringIO | None = None) -> str:
    out = io.StringIO()
    call_command("runevals", *args, stdout=out, stderr=err or io.StringIO())
    return out.getvalue()


@pytest.fixture
def workspace(tmp_path: Path, settings) -> Path:
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    settings.EVALSITE_API_MAX_RETRIES = 3
    settings.EVALSITE_API_TIMEOUT = 5
    return settings.EVALSITE_WORKSPACE_DIR


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    from .test_runevals import good_agent

    with FakeAnthropic(good_agent) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield fake
    assert not fake.errors, fake.errors


def test_each_model_gets_its_own_iteration_and_the_skill_its_matrix(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    skill = make_skill(tmp_path)

    out = runevals("--harness", "messages", "--model", "model-a,model-b", str(skill))

    iterations = list(Iteration.objects.order_by("number"))
    assert [(i.number, i.agent_model) for i in iterations] == [(1, "model-a"), (2, "model-b")]
    assert {i.harness for i in iterations} == {"evalsite-runevals"}
    for folder, model in (("iteration-1", "model-a"), ("iteration-2", "model-b")):
        conditions = json.loads((workspace / "demo" / folder / "conditions.json").read_text())
        assert conditions["agent_model"] == model and conditions["harness"]
        assert conditions["runevals"]["harness_version"]
    agent_models = {r.body["model"] for r in api.message_requests if not r.forced_tool}
    assert agent_models == {"model-a", "model-b"}
    assert out.splitlines()[0] == "Running harness messages, model model-a"
    lines = out[out.index("[harness messages, model model-a]") :].splitlines()
    assert lines[0] == "[harness messages, model model-a]"
    assert lines[1].startswith("demo #1 (iteration-1); with_skill 1.00")
    assert lines[2] == "[harness messages, model model-b]"
    assert lines[3].startswith("demo #2 (iteration-2); with_skill 1.00")
    axes = skill_axes(iterations[0].skill, mode="new-skill")
    assert [(c.harness, c.model) for c in axes.combinations] == [
        ("evalsite-runevals", "model-a"),
        ("evalsite-runevals", "model-b"),
    ]
    assert axes.harnesses == ["evalsite-runevals"] and axes.models == ["model-a", "model-b"]


def test_json_gives_a_list_of_the_combinations(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    skill = make_skill(tmp_path)

    out = runevals(
        "--harness", "messages", "--model", "m1,m2", "--only", "write-notes", "--json", str(skill)
    )

    data = json.loads(out)
    assert [(d["harness"], d["model"]) for d in data] == [("messages", "m1"), ("messages", "m2")]
    assert [d["reports"][0]["iteration"] for d in data] == [1, 2]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--model", "a,a"], "--model: a given more than once"),
        (["--model", "a,,b"], "--model: an empty name in 'a,,b'"),
        (["--harness", "messages,messages"], "--harness: messages given more than once"),
        (["--harness", "messages,nope"], "--harness: unknown harness 'nope' (known: "),
    ],
)
def test_bad_lists_are_refused_in_one_line_before_any_work(
    tmp_path: Path, workspace: Path, flags: list[str], message: str
) -> None:
    skill = make_skill(tmp_path)
    args = ["--harness", "messages", "--model", "a,b", *flags, str(skill)]

    with pytest.raises(CommandError) as info:
        runevals(*args)

    assert info.value.returncode == 2
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    assert not workspace.exists()


class Unrunnable:
    """A harness this machine cannot run (its CLI missing, say)."""

    @classmethod
    def problem(cls) -> str:
        return "unrunnable: its CLI is not installed"


def test_one_combination_that_cannot_run_stops_all_before_any_work(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(registry.HARNESSES, "unrunnable", f"{__name__}:Unrunnable")
    skill = make_skill(tmp_path)

    with pytest.raises(CommandError) as info:
        runevals("--harness", "messages,unrunnable", "--model", "m", str(skill))

    assert info.value.returncode == 2
    assert str(info.value) == "unrunnable: its CLI is not installed"
    assert not api.message_requests and not Iteration.objects.exists()


def test_dry_run_plans_each_combination(tmp_path: Path, workspace: Path) -> None:
    out = runevals(
        "--harness", "messages", "--model", "m1,m2", "--dry-run", str(make_skill(tmp_path))
    )

    assert out.count("demo: new-skill, 2 evals × 2 conditions") == 2
    assert "agent m1, judge" in out and "agent m2, judge" in out
    assert out.splitlines()[0] == "[harness messages, model m1]"
    assert not workspace.exists()


def test_the_token_limit_holds_across_the_whole_invocation(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    skill = make_skill(tmp_path)

    with pytest.raises(CommandError) as info:
        out = io.StringIO()
        call_command(
            "runevals",
            *("--harness", "messages", "--model", "m1,m2", "--concurrency", "1"),
            *("--max-tokens", "1", "--only", "write-notes", str(skill)),
            stdout=out,
            stderr=io.StringIO(),
        )

    # The first run starts (nothing is spent yet), then nothing else does, m2 included.
    assert info.value.returncode == 1
    assert str(info.value) == "2 of 2 combinations did not pass: messages × m1; messages × m2"
    assert list(Iteration.objects.values_list("agent_model", flat=True)) == ["m1"]
    assert "not started: demo" in out.getvalue().split("[harness messages, model m2]")[1]


def test_resume_finishes_the_interrupted_combination_and_skips_those_before_it(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    skill = make_skill(tmp_path)
    runevals("--harness", "messages", "--model", "m1,m2", "--only", "write-notes", str(skill))
    # m2's iteration was interrupted before its benchmark.json was written; m3 never started.
    (workspace / "demo" / "iteration-2" / "benchmark.json").unlink()
    calls = len(api.message_requests)

    out = runevals(
        *("--harness", "messages", "--model", "m1,m2,m3", "--only", "write-notes"),
        *("--resume", str(skill)),
    )

    blocks = out.split("[harness messages, model ")
    assert "not played again (--resume)" in blocks[1]
    assert blocks[2].startswith("m2]\ndemo #2 (iteration-2)") and "resumed" in blocks[2]
    assert blocks[3].startswith("m3]\ndemo #3 (iteration-3)")
    # Only m3's runs called the API: m1 was not played, m2's finished runs were kept.
    agent_models = {r.body["model"] for r in api.message_requests[calls:] if not r.forced_tool}
    assert agent_models == {"m3"}
    assert list(Iteration.objects.order_by("number").values_list("agent_model", flat=True)) == [
        "m1",
        "m2",
        "m3",
    ]


@pytest.mark.usefixtures("celery_here")
def test_queue_and_wait_queue_each_combination_once_the_one_before_is_imported(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, settings
) -> None:
    settings.STORAGES = {
        **settings.STORAGES,
        "runs": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "store")},
        },
    }
    skill = make_skill(tmp_path)

    out = runevals(
        *("--harness", "messages", "--model", "m1,m2", "--only", "write-notes"),
        *("--queue", "--wait", str(skill)),
    )

    assert Campaign.objects.count() == 2
    iterations = Iteration.objects.order_by("number").values_list("number", "agent_model")
    assert list(iterations) == [(1, "m1"), (2, "m2")]
    summary = out[out.index("[harness messages, model m1]") :]
    assert summary.splitlines()[1].startswith("demo #1 (iteration-1)")
    assert "[harness messages, model m2]\ndemo #2 (iteration-2)" in summary


def test_queue_with_several_combinations_needs_wait(tmp_path: Path, workspace: Path) -> None:
    with pytest.raises(CommandError) as info:
        runevals("--harness", "messages", "--model", "a,b", "--queue", str(make_skill(tmp_path)))

    assert info.value.returncode == 2
    assert str(info.value).startswith("--queue with several harnesses or models needs --wait")


def test_triggers_take_one_combination(tmp_path: Path, workspace: Path) -> None:
    with pytest.raises(CommandError) as info:
        runevals("--triggers", "--model", "a,b", str(make_skill(tmp_path)))

    assert str(info.value) == "--triggers takes one harness and one model"


def test_a_combination_that_fails_while_playing_does_not_stop_the_next(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grading.campaigns import axes
    from grading.campaigns.options import CampaignError

    real = axes.run_evals

    def failing_m1(**kwargs):
        if kwargs["agent_model"] == "m1" and not kwargs.get("dry_run"):
            raise CampaignError("demo is locked by another runevals")
        return real(**kwargs)

    monkeypatch.setattr(axes, "run_evals", failing_m1)
    skill = make_skill(tmp_path)
    out = io.StringIO()

    with pytest.raises(CommandError) as info:
        call_command(
            "runevals",
            *("--harness", "messages", "--model", "m1,m2", "--only", "write-notes", str(skill)),
            stdout=out,
            stderr=io.StringIO(),
        )

    assert info.value.returncode == 2
    assert str(info.value) == "1 of 2 combinations could not run: messages × m1"
    assert "[harness messages, model m1]\ncould not run: demo is locked" in out.getvalue()
    assert list(Iteration.objects.values_list("agent_model", flat=True)) == ["m2"]
