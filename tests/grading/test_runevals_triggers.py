"""`manage.py runevals --triggers`: does a description make the agent load its skill?

The messages harness and (slow) the real Claude Code CLI play every session against the fake
Messages API, whose scripted agent loads the skill under test on some queries, a sibling on
others, no skill on the rest, and whose answer times out or fails on one query each. Every
figure written is checked against a count made by hand from that script.
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.core.management import CommandError, call_command

from grading import sandbox
from grading.campaigns.options import CampaignError
from grading.evaluating.claude_code.staging import staged_text
from grading.evaluating.plan import SkillVersion
from grading.evaluating.skillcalls import turn_skills
from grading.triggering.plan import TriggerQuery, holdout_split, read_description
from grading.triggering.workflow import DescriptionReport, TriggerCampaignResult
from runs.importing import ImportFailure, read_trigger_set
from runs.models import TriggerIteration, TriggerRun
from tests.factories import write_json
from tests.fakeapi import FakeAnthropic, RecordedRequest, api_error, reply, slow, tool_use

SKILL_MD = "---\nname: demo\ndescription: Use when writing notes.\nlicense: MIT\n---\nTake notes.\n"
TESTED = "Use whenever the user wants notes, minutes or a summary written down."
SECOND = "Use for meeting notes only."

LOADS = "Write notes about the meeting."  # loads demo on every run
SOMETIMES = "Take notes on this call."  # loads demo on 2 runs of 3, none on the third
SIBLING = "Draw a chart of the sales."  # loads `charts` (a sibling) on every run
NOTHING = "What is 2+2?"  # loads nothing
SLOW = "Summarise the notes slowly."  # the API never answers in time: timeouts
BROKEN = "Break the API."  # the API refuses: errors
SET = [
    {"query": LOADS, "should_trigger": True},
    {"query": SOMETIMES, "should_trigger": True},
    {"query": SIBLING, "should_trigger": False},
    {"query": NOTHING, "should_trigger": False},
    {"query": SLOW, "should_trigger": True},
    {"query": BROKEN, "should_trigger": False},
    {"query": LOADS, "should_trigger": True},  # a duplicate: one query
]


def make_collection(root: Path) -> Path:
    """skills/demo (with its trigger set) and skills/charts, its sibling."""
    demo = root / "skills" / "demo"
    (demo / "evals").mkdir(parents=True)
    (demo / "SKILL.md").write_text(SKILL_MD)
    write_json(demo / "evals" / "trigger-eval.json", SET)
    charts = root / "skills" / "charts"
    charts.mkdir()
    (charts / "SKILL.md").write_text(
        "---\nname: charts\ndescription: Use when drawing charts.\n---\nPlot it.\n"
    )
    return demo


class Agent:
    """The scripted agent, by query: thread-safe, so that concurrent sessions count right."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.openings: Counter[tuple[str, str]] = Counter()

    def __call__(self, request: RecordedRequest) -> Any:
        said = request.first_user_text
        query = next(
            (q for q in (LOADS, SOMETIMES, SIBLING, NOTHING, SLOW, BROKEN) if q in said), None
        )
        if query is None or "Skill" not in request.tool_names:  # the CLI's side requests
            return reply("OK.")
        if request.assistant_turns:
            return reply("Done.")
        if query == SLOW:
            return slow(60)
        if query == BROKEN:
            return api_error(400, "invalid_request_error", "fakeapi: this query is refused")
        body = json.dumps(request.body)
        tested = next((d for d in (TESTED, SECOND) if d in body), "SKILL.md's")
        with self.lock:  # counted per description: each is tested on the same script
            self.openings[query, tested] += 1
            nth = self.openings[query, tested]
        if query == LOADS or (query == SOMETIMES and nth <= 2):
            return reply(tool_use("Skill", {"skill": "demo"}))
        if query == SIBLING:
            return reply(tool_use("Skill", {"skill": "charts"}))
        return reply("4." if query == NOTHING else "Sure, here are your notes.")


@pytest.fixture
def workspace(tmp_path: Path, settings) -> Path:
    settings.EVALSITE_WORKSPACE_DIR = tmp_path / "workspace"
    settings.EVALSITE_API_MAX_RETRIES = 0
    settings.EVALSITE_API_TIMEOUT = 30
    return settings.EVALSITE_WORKSPACE_DIR


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    with FakeAnthropic(Agent()) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield fake
    assert not fake.errors, fake.errors


def runevals(*args: str, harness: str = "messages") -> str:
    out = io.StringIO()
    unsafe = ["--unsafe-no-sandbox"] if sandbox.sandbox_problem() else []
    call_command("runevals", "--triggers", "--harness", harness, *unsafe, *args, stdout=out)
    return out.getvalue()


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def only_folder(workspace: Path) -> Path:
    (folder,) = (workspace / "demo").glob("triggers-*")
    assert re.fullmatch(r"triggers-\d{8}T\d{6}Z", folder.name)
    return folder


def check_hand_counted(data: dict[str, Any], *, siblings: bool) -> None:
    """Every figure of a description's results, against the agent's script (3 runs each)."""
    rows = {row["query"]: row for row in data["results"]}
    assert list(rows) == [LOADS, SOMETIMES, SIBLING, NOTHING, SLOW, BROKEN]  # LOADS once
    expected = {
        # query: (triggers, runs, errors, loaded, pass, rate)
        LOADS: (3, 3, 0, {"demo": 3}, True, 1.0),
        SOMETIMES: (2, 3, 0, {"demo": 2, "none": 1}, True, 0.6667),
        SIBLING: (0, 3, 0, {"charts": 3} if siblings else {"none": 3}, True, 0.0),
        NOTHING: (0, 3, 0, {"none": 3}, True, 0.0),
        SLOW: (0, 0, 3, {}, False, None),
        BROKEN: (0, 0, 3, {}, False, None),
    }
    for query, (triggers, runs, errors, loaded, passed, rate) in expected.items():
        row = rows[query]
        got = (row["triggers"], row["runs"], row["errors"], row["loaded"], row["pass"])
        assert got == (triggers, runs, errors, loaded, passed), query
        assert row["trigger_rate"] == rate, query
        assert [r["run"] for r in row["run_records"]] == [1, 2, 3]
    assert data["summary"] == {"total": 6, "passed": 4, "failed": 2}
    outcomes = {q: Counter(r["outcome"] for r in rows[q]["run_records"]) for q in rows}
    assert outcomes[LOADS] == {"loaded": 3}
    assert outcomes[SOMETIMES] == {"loaded": 2, "none": 1}
    assert outcomes[SIBLING] == ({"other": 3} if siblings else {"none": 3})
    assert outcomes[SLOW] == {"timeout": 3}
    assert outcomes[BROKEN] == {"error": 3}
    broken = rows[BROKEN]["run_records"][0]
    assert "this query is refused" in broken["error"] and broken["loaded_skill"] == ""
    loaded = rows[LOADS]["run_records"][0]
    assert loaded["loaded_skill"] == "demo" and loaded["final_message"] == "Done."
    assert loaded["tool_calls"] == [{"name": "Skill", "input": {"skill": "demo"}}]
    assert loaded["error"] == "" and loaded["total_tokens"] > 0
    if siblings:
        assert {row["expected"] for row in rows.values() if row["should_trigger"]} == {"demo"}
        assert {row["expected"] for row in rows.values() if not row["should_trigger"]} == {"none"}
        assert rows[SIBLING]["run_records"][0]["loaded_skill"] == "charts"
    else:
        assert all("expected" not in row for row in rows.values())


@pytest.mark.django_db
def test_it_plays_every_description_query_and_run_and_writes_what_each_loaded(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    skill = make_collection(tmp_path)
    second = tmp_path / "second.md"
    second.write_text(f"---\nname: demo\ndescription: {SECOND}\n---\nBody.\n")

    output = runevals(
        str(skill),
        "--description", TESTED,
        "--description", str(second),
        "--siblings",
        "--trigger-timeout", "3",
        "--model", "claude-test-1",
    )  # fmt: skip

    folder = only_folder(workspace)
    for index, description in ((1, TESTED), (2, SECOND)):
        data = load(folder / f"description-{index}" / "trigger-results.json")
        assert data["skill_name"] == "demo" and data["description"] == description
        check_hand_counted(data, siblings=True)
        assert data["evalsite"] == {
            "harness": "messages",
            "harness_version": "1",
            "model": "claude-test-1",
            "runs_per_query": 3,
            "threshold": 0.5,
            "siblings": ["charts"],
            "holdout": None,
            "seed": 42,
            "generated_at": data["evalsite"]["generated_at"],
        }
        for row in data["results"]:
            assert {row["split"]} == {""}
            for record in row["run_records"]:
                conversation = load(folder / f"description-{index}" / record["transcript"])
                assert conversation["events"][0]["text"] == row["query"]
    # Both descriptions were offered as the skill's; SKILL.md's never was.
    systems = [r.system_text for r in api.message_requests if r.system_text]
    assert any(f"- demo: {TESTED}" in s for s in systems)
    assert any(f"- demo: {SECOND}" in s for s in systems)
    assert all("- charts: Use when drawing charts." in s for s in systems)
    assert not any("Use when writing notes." in s for s in systems)
    assert (skill / "SKILL.md").read_text() == SKILL_MD
    assert not list(folder.glob("env-*")) and not (folder / ".template").exists()

    lines = output.strip().splitlines()
    assert lines[-2] == (
        "demo description-1 (--description 1): recall 83%, false triggers 0%, "
        "4/6 queries passed; 12 runs finished, 6 not (3 timed out, 3 errored); "
        "Imported skills: 1 created, 0 updated, 0 unchanged; "
        "trigger iterations: 1 created, 0 updated, 0 unchanged"
    )
    assert lines[-1].startswith("demo description-2 (--description 2 (second.md)): recall 83%")
    iterations = TriggerIteration.objects.filter(skill__name="demo").order_by("number")
    assert [i.description for i in iterations] == [TESTED, SECOND]
    first = iterations[0]
    assert (first.siblings, first.harness, first.agent_model) == (
        ["charts"],
        "messages 1",
        "claude-test-1",
    )
    queries = list(first.queries.order_by("position"))
    assert [(q.query, q.triggers, q.runs, q.errors) for q in queries] == [
        (LOADS, 3, 3, 0),
        (SOMETIMES, 2, 3, 0),
        (SIBLING, 0, 3, 0),
        (NOTHING, 0, 3, 0),
        (SLOW, 0, 0, 3),
        (BROKEN, 0, 0, 3),
    ]
    runs = TriggerRun.objects.filter(query__iteration=first)
    assert Counter(r.outcome for r in runs) == {
        "loaded": 5,
        "none": 4,
        "other": 3,
        "timeout": 3,
        "error": 3,
    }
    assert all(r.events and r.events[0]["text"] == r.query.query for r in runs)


@pytest.mark.django_db
def test_without_siblings_the_skill_alone_is_offered_and_a_holdout_split_is_recorded(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    skill = make_collection(tmp_path)

    out = tmp_path / "results"
    printed = runevals(
        str(skill), "--holdout", "0.4", "--trigger-timeout", "3", "--json", "--out", str(out)
    )

    assert not workspace.exists()
    data = load(only_folder(out) / "description-1" / "trigger-results.json")
    assert json.loads(printed)[0]["summary"] == data["summary"]
    assert data["description"] == "Use when writing notes."  # SKILL.md's
    check_hand_counted(data, siblings=False)
    assert data["evalsite"]["holdout"] == 0.4 and data["evalsite"]["siblings"] == []
    splits = {row["query"]: row["split"] for row in data["results"]}
    expected = holdout_split(
        [TriggerQuery(r["query"], r["should_trigger"]) for r in SET[:6]], holdout=0.4
    )
    assert splits == {q.query: q.split for q in expected}
    assert all(
        "charts" not in r.system_text and "Skill" in r.tool_names for r in api.message_requests
    )


def test_the_holdout_split_is_stratified_reproducible_and_keeps_each_class_in_train() -> None:
    queries = [TriggerQuery(f"yes {i}", True) for i in range(10)]
    queries += [TriggerQuery(f"no {i}", False) for i in range(5)]

    split = holdout_split(queries, holdout=0.4, seed=42)

    test = [q for q in split if q.split == "test"]
    assert sum(q.should_trigger for q in test) == 4  # int(10 * 0.4)
    assert sum(not q.should_trigger for q in test) == 2  # int(5 * 0.4)
    assert split == holdout_split(queries, holdout=0.4, seed=42)
    assert split != holdout_split(queries, holdout=0.4, seed=7)
    two = holdout_split([TriggerQuery("a", True), TriggerQuery("b", True)], holdout=0.9)
    assert sorted(q.split for q in two) == ["test", "train"]
    one = holdout_split([TriggerQuery("a", True), TriggerQuery("b", False)], holdout=0.5)
    assert {q.split for q in one} == {"train"}


def test_a_turn_loaded_the_skill_when_any_skill_call_names_it() -> None:
    calls = [
        {"name": "Read", "args": {"file_path": "README.md"}},
        {"name": "Skill", "args": {"skill": "unknown"}},
        {"name": "Skill", "args": {"skill": "charts"}},
        {"name": "Skill", "args": {"skill": "plugin:demo"}},
        {"name": "Bash", "args": {"command": "ls"}},
        {"name": "Bash", "args": {"command": "pwd"}},
    ]

    found = turn_skills(calls, subject="demo", staged=["charts"])

    assert (found.outcome, found.loaded_skill, found.loaded) == (
        "loaded",
        "demo",
        ("charts", "demo"),
    )
    assert len(found.tool_calls) == 5
    assert found.tool_calls[1] == {"name": "Skill", "input": {"skill": "unknown"}}
    other = turn_skills(calls[:3], subject="demo", staged=["charts"])
    assert (other.outcome, other.loaded_skill) == ("other", "charts")
    assert turn_skills(calls[:2], subject="demo", staged=["charts"]).outcome == "none"
    assert (
        turn_skills([{"name": "Skill", "args": None}], subject="demo", staged=[]).outcome == "none"
    )


def test_the_staged_skill_md_says_the_tested_description_and_keeps_the_rest() -> None:
    skill = SkillVersion("demo", "Use for: notes.", "Take notes.\n", "SKILL.md")
    folded = (
        "---\nname: demo\ndescription: >\n  Use when\n  writing notes.\nlicense: MIT\n---\n"
        "Take notes.\n"
    )

    staged = staged_text(folded, skill)

    assert (
        staged
        == '---\nname: demo\nlicense: MIT\ndescription: "Use for: notes."\n---\nTake notes.\n'
    )
    assert staged_text(staged, skill) is None  # already says it
    assert staged_text("Take notes.\n", skill) == (
        '---\nname: demo\ndescription: "Use for: notes."\n---\nTake notes.\n'
    )


def test_a_trigger_set_is_read_in_any_shape_with_repeated_queries_once() -> None:
    grouped = [
        {"skill": "demo", "queries": [{"query": "a", "should_trigger": True}] * 2},
        {"skill": "other", "queries": [{"query": "b", "should_trigger": False}]},
    ]
    assert read_trigger_set(json.dumps(grouped).encode(), display="t.json", skill_name="demo") == [
        {"query": "a", "should_trigger": True}
    ]
    cases = {"cases": [{"id": "1", "prompt": "c", "expected_trigger": False}]}
    assert read_trigger_set(json.dumps(cases).encode(), display="t.json") == [
        {"query": "c", "should_trigger": False}
    ]
    results = {"results": [{"query": "a", "should_trigger": True, "trigger_rate": 1.0}]}
    with pytest.raises(ImportFailure, match="t.json: expected a trigger set"):
        read_trigger_set(json.dumps(results).encode(), display="t.json")


def test_dry_run_prints_the_plan_and_runs_nothing(
    tmp_path: Path, workspace: Path, fake_api: FakeAnthropic
) -> None:
    skill = make_collection(tmp_path)

    output = runevals(str(skill), "--dry-run", "--siblings", "--holdout", "0.4", "--runs", "2")

    assert output.splitlines()[0].startswith(
        "demo: triggers, 1 description(s) × 6 queries × 2 runs = 12 sessions; harness messages"
    )
    assert "  description-1 (SKILL.md): Use when writing notes." in output
    assert "  queries: 3 should trigger, 3 should not" in output
    assert "  holdout 0.4 (seed 42): 4 train, 2 test" in output
    assert "  siblings staged: charts" in output
    assert fake_api.calls == 0 and not workspace.exists()


def test_a_skill_without_a_trigger_set_is_a_one_line_error_naming_what_was_looked_for(
    tmp_path: Path, workspace: Path, fake_api: FakeAnthropic
) -> None:
    skill = make_collection(tmp_path)
    (skill / "evals" / "trigger-eval.json").unlink()

    with pytest.raises(CommandError) as info:
        runevals(str(skill))

    message = str(info.value)
    assert info.value.returncode == 2 and "\n" not in message
    assert message.startswith(f"{skill}: no trigger set (looked for evals/trigger-eval.json, ")
    assert "eval_set.json" in message and "evals/demo-trigger.json" in message
    assert fake_api.calls == 0


def test_the_other_places_a_set_is_kept_are_read(
    tmp_path: Path, workspace: Path, fake_api: FakeAnthropic
) -> None:
    skill = make_collection(tmp_path)
    (skill / "evals" / "trigger-eval.json").rename(skill / "evals" / "demo-trigger.json")

    output = runevals(str(skill), "--dry-run")

    assert f"set {skill / 'evals' / 'demo-trigger.json'}" in output


def test_without_an_api_key_it_exits_2_before_any_work(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    with pytest.raises(CommandError) as info:
        runevals(str(make_collection(tmp_path)))

    assert info.value.returncode == 2 and "ANTHROPIC_API_KEY is not set" in str(info.value)
    assert not workspace.exists()


def test_eval_run_options_are_refused_with_triggers(tmp_path: Path, workspace: Path) -> None:
    with pytest.raises(CommandError, match="--only: not with --triggers") as info:
        runevals(str(make_collection(tmp_path)), "--only", "x")
    assert info.value.returncode == 2
    with pytest.raises(CommandError, match="--holdout: only with --triggers"):
        call_command("runevals", str(tmp_path), "--holdout", "0.4")


@pytest.mark.parametrize("hostile", ["SKILL.md", "evals/trigger-eval.json", "sibling"])
def test_a_link_where_a_definition_belongs_is_refused_never_followed(
    tmp_path: Path, workspace: Path, fake_api: FakeAnthropic, hostile: str
) -> None:
    skill = make_collection(tmp_path)
    secret = tmp_path / "secret.md"
    secret.write_text("---\nname: demo\ndescription: the host's secret\n---\nsecret\n")
    target = (
        tmp_path / "skills" / "charts" / "SKILL.md" if hostile == "sibling" else skill / hostile
    )
    target.unlink()
    target.symlink_to(secret)

    with pytest.raises(CommandError) as info:
        runevals(str(skill), "--siblings")

    assert info.value.returncode == 2
    assert f"{target} is a symbolic link; refused" in str(info.value)
    assert fake_api.calls == 0


@pytest.mark.django_db
def test_a_fifo_in_the_skill_folder_or_as_its_set_never_blocks(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    skill = make_collection(tmp_path)
    os.mkfifo(skill / "notes.pipe")
    write_json(skill / "evals" / "trigger-eval.json", [{"query": LOADS, "should_trigger": True}])

    runevals(str(skill), "--runs", "1")  # the messages harness never opens the skill's files

    data = load(only_folder(workspace) / "description-1" / "trigger-results.json")
    assert data["results"][0]["loaded"] == {"demo": 1}
    (skill / "evals" / "trigger-eval.json").unlink()
    os.mkfifo(skill / "evals" / "trigger-eval.json")
    with pytest.raises(CommandError, match="trigger-eval.json is a FIFO; refused"):
        runevals(str(skill), "--dry-run")


# --- the real Claude Code CLI (slow) ----------------------------------------------------


@pytest.mark.django_db
def test_the_cli_loads_the_skill_staged_as_a_project_skill_with_the_tested_description(
    cli: Path, tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    skill = make_collection(tmp_path)
    args = ["--description", TESTED, "--siblings", "--trigger-timeout", "30", "--keep-env"]

    output = runevals(str(skill), *args, "--concurrency", "2", harness="claude-code")

    folder = only_folder(workspace)
    data = load(folder / "description-1" / "trigger-results.json")
    check_hand_counted(data, siblings=True)
    assert data["evalsite"]["harness"] == "claude-code"
    assert re.fullmatch(r"\d+\.\d+\.\d+", data["evalsite"]["harness_version"])
    assert (
        "timed out" in data["results"][4]["run_records"][0]["error"]
        or "stopped" in (data["results"][4]["run_records"][0]["error"])
    )
    # Staged as project skills, the tested description in the front matter; no commands.
    envs = sorted(folder.glob("env-*"))
    assert len(envs) == 18
    for env in envs:
        staged = (env / ".claude" / "skills" / "demo" / "SKILL.md").read_text()
        assert f"description: {json.dumps(TESTED)}" in staged and "license: MIT" in staged
        assert (env / ".claude" / "skills" / "charts" / "SKILL.md").is_file()
        assert not (env / ".claude" / "commands").exists()
    assert (skill / "SKILL.md").read_text() == SKILL_MD
    bodies = [json.dumps(r.body) for r in api.message_requests]
    assert any(f"demo: {TESTED}" in body for body in bodies)
    assert not any("Use when writing notes." in body for body in bodies)
    assert "recall 83%" in output


@pytest.mark.django_db
def test_the_cli_records_a_skill_it_could_not_stage_as_an_error_not_a_miss(
    cli: Path, tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    skill = make_collection(tmp_path)
    os.mkfifo(skill / "notes.pipe")
    write_json(skill / "evals" / "trigger-eval.json", [{"query": LOADS, "should_trigger": True}])

    runevals(str(skill), "--runs", "1", harness="claude-code")

    row = load(only_folder(workspace) / "description-1" / "trigger-results.json")["results"][0]
    assert (row["runs"], row["errors"], row["pass"]) == (0, 1, False)
    assert row["run_records"][0]["outcome"] == "error"
    assert "notes.pipe is a FIFO; refused" in row["run_records"][0]["error"]
    assert api.calls == 0


def test_fail_on_regression_compares_each_description_with_the_first_tested() -> None:
    def report(label: str, passed: int) -> DescriptionReport:
        data = {"summary": {"total": 6, "passed": passed, "failed": 6 - passed}}
        return DescriptionReport("demo", label, Path(), data, "")

    same = TriggerCampaignResult(reports=[report("description-1", 4), report("description-2", 5)])
    same.check(fail_on_regression=True)
    worse = TriggerCampaignResult(reports=[report("description-1", 4), report("description-2", 3)])
    worse.check(fail_on_regression=False)
    with pytest.raises(CampaignError, match=r"description-2 \(3 < 4\)") as info:
        worse.check(fail_on_regression=True)
    assert info.value.returncode == 1


def test_a_description_too_long_for_a_file_name_is_taken_as_text() -> None:
    text = "Use when " + "notes " * 100
    assert read_description(text, 1).text == text.strip()


@pytest.mark.django_db
def test_the_pass_threshold_is_a_choice_recorded_with_the_results(
    tmp_path: Path, workspace: Path, api: FakeAnthropic
) -> None:
    skill = make_collection(tmp_path)

    runevals(str(skill), "--trigger-threshold", "0.9", "--trigger-timeout", "3")

    data = load(only_folder(workspace) / "description-1" / "trigger-results.json")
    assert data["evalsite"]["threshold"] == 0.9
    verdicts = {row["query"]: row["pass"] for row in data["results"]}
    assert verdicts[LOADS] is True and verdicts[SOMETIMES] is False  # 3/3 passes, 2/3 not
    assert TriggerIteration.objects.get(skill__name="demo").threshold == 0.9
    with pytest.raises(CommandError, match="--trigger-threshold must be above 0") as info:
        runevals(str(skill), "--trigger-threshold", "0")
    assert info.value.returncode == 2


def test_triggers_refuse_a_harness_whose_skill_loads_cannot_be_seen() -> None:
    from grading.campaigns.options import CampaignError
    from grading.triggering.workflow import _harness

    with (
        pytest.raises(CampaignError, match="codex: it has no skill tool") as raised,
        mock.patch("grading.evaluating.registry.problem", return_value=None),
    ):
        _harness("codex", 60)
    assert "not observable" in str(raised.value)
    from grading.evaluating.messages import MessagesHarness

    assert isinstance(_harness("messages", 60), MessagesHarness)
