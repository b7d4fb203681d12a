"""`manage.py regrade`: imported runs graded again through the graders, the real anthropic
client talking to the fake Messages API."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client

from grading.regrading import regrade_iteration
from grading.reviewing import override
from runs.importing import import_workspace
from runs.models import AssertionResult, Grading, GradingHistory, Iteration, Review, Run
from runs.warnings import messages
from tests.factories import (
    eval_magic_iteration,
    skill_creator_iteration,
    skill_folder,
    write_json,
)
from tests.fakeapi import FakeAnthropic, RecordedRequest, Reply, api_error, judge_verdict

pytestmark = pytest.mark.django_db

CREATOR = "creator-skill"
DEMO = "demo-skill"
JUDGE = "claude-judge-2"

EVALS = [
    {
        "id": "alpha",
        "prompt": "Do the task.",
        "expected_output": "The task is done.",
        "assertions": [
            {"id": "a1", "type": "llm_judge", "rubric": "Is it done?"},
            {
                "id": "a2",
                "type": "transcript_check",
                "check": "tool_invocation_matches",
                "pattern": "Read",
            },
            {"id": "c1", "type": "command_check", "command": "test -f notes.md"},
            {"id": "d1", "type": "diff_scope", "max_files_touched": 1},
        ],
    }
]
RECORDED = {"a1": True, "a2": False, "c1": True, "d1": True}


def verdicts(passed: bool) -> Callable[[RecordedRequest], Reply]:
    """A judge that gives every rubric the same verdict, quoting the rubric it was shown."""

    def respond(request: RecordedRequest) -> Reply:
        rubric = request.first_user_text.split("<rubric>\n", 1)[1].split("\n</rubric>")[0]
        return judge_verdict(passed, f"fake judge on {rubric!r}", 0.9)

    return respond


def page_scores(html: str) -> list[str]:
    """The iteration page's per-condition scores, in the order shown."""
    return re.findall(r'<td>(\d\.\d\d) <span class="muted small">', html)


def regrade(*args: str) -> str:
    out = io.StringIO()
    call_command("regrade", *args, stdout=out)
    return out.getvalue()


def results(run: Run) -> dict[str, tuple[bool, str, str]]:
    """assertion id → (passed, evidence, judge model) of the run's current grading."""
    return {
        r.assertion_id: (r.passed, r.evidence, r.judge_model)
        for r in AssertionResult.objects.filter(grading__run=run)
    }


@pytest.fixture
def creator(tmp_path: Path) -> Iteration:
    """A skill-creator iteration whose grader never ran on two of its four runs."""
    folder = skill_creator_iteration(tmp_path)
    (folder / "eval-0-summarise" / "with_skill" / "run-2" / "grading.json").unlink()
    (folder / "eval-0-summarise" / "without_skill" / "run-1" / "grading.json").unlink()
    import_workspace([folder.parent])
    return Iteration.objects.get(skill__name=CREATOR)


@pytest.fixture
def demo(tmp_path: Path) -> Iteration:
    """An eval-magic iteration with every assertion kind; with_skill run-2 was interrupted
    after the agent finished (no grading.json), with its diff-scope.json written."""
    skill_folder(tmp_path / "skills", name=DEMO, evals=EVALS)
    folder = eval_magic_iteration(
        tmp_path / "ws",
        skill=DEMO,
        cells={
            ("alpha", "with_skill"): [RECORDED, None],
            ("alpha", "without_skill"): [RECORDED, RECORDED],
        },
    )
    write_json(
        folder / "eval-alpha" / "with_skill" / "run-2" / "diff-scope.json",
        {"files_touched": 1, "lines_added": 3, "lines_removed": 0, "hunks": 1},
    )
    import_workspace([tmp_path])
    return Iteration.objects.get(skill__name=DEMO)


def test_it_grades_the_runs_a_skill_creator_grader_never_ran_on(
    creator: Iteration, fake_api_env: FakeAnthropic
) -> None:
    fake_api_env.script = verdicts(True)
    graded = {g.pk: results(g.run) for g in Grading.objects.all()}
    assert creator.missing_gradings == 2
    assert any("2 run(s) have no grading" in w for w in messages(creator.validity_warnings))

    out = regrade(CREATOR, "1", "--only-missing", "--judge-model", JUDGE)

    assert out.startswith(f"Regraded {creator}: 2 graded, 0 regraded, 2 skipped; 4 judge call(s)")
    assert [r.model for r in fake_api_env.message_requests] == [JUDGE] * 4
    # The judge read what skill-creator kept of the run: its prompt and its outputs/.
    request = fake_api_env.message_requests[0].first_user_text
    assert "Summarise the report." in request and "outputs/summary.md" in request
    assert "Total: 4" in request

    new = Grading.objects.get(run__condition__name="with_skill", run__run_index=2)
    assert new.format == "evalsite" and new.regraded["judge_models"] == [JUDGE]
    assert results(new.run) == {
        "mentions-the-total": (True, "fake judge on 'Mentions the total'", JUDGE),
        "is-under-100-words": (True, "fake judge on 'Is under 100 words'", JUDGE),
    }
    assert list(new.results.values_list("text", flat=True)) == [
        "Mentions the total",
        "Is under 100 words",
    ]
    assert (new.passed, new.total, new.pass_rate) == (2, 2, 1.0)
    # --only-missing leaves graded runs alone: same results, no history.
    assert {pk: results(Grading.objects.get(pk=pk).run) for pk in graded} == graded
    assert not GradingHistory.objects.exists()
    creator.refresh_from_db()
    assert creator.missing_gradings == 0
    assert not any("have no grading" in w for w in messages(creator.validity_warnings))
    assert any(
        "2 run(s) graded or regraded by evalsite" in w for w in messages(creator.validity_warnings)
    )


def test_regrading_with_another_judge_keeps_the_old_gradings_and_moves_every_figure(
    creator: Iteration, fake_api_env: FakeAnthropic, client: Client, settings
) -> None:
    # Pages and summaries are cached on the iteration's stamp: use a real cache.
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "rg"}
    }
    cache.clear()
    api = f"/api/skills/{CREATOR}/iterations/1"
    page = f"/skills/{CREATOR}/iterations/1/"
    before = {c["name"]: c["score"]["mean"] for c in client.get(api).json()["conditions"]}
    assert before == {"with_skill": 1.0, "without_skill": 0.5}
    first_page = client.get(page)
    assert first_page.status_code == 200
    assert page_scores(first_page.content.decode()) == ["1.00", "0.50"]
    assert "judge " + JUDGE not in first_page.content.decode()
    old = {g.run_id: (g.pass_rate, results(g.run)) for g in Grading.objects.all()}
    fake_api_env.script = verdicts(False)

    out = regrade(CREATOR, "iteration-1", "--judge-model", JUDGE)

    assert "2 graded, 2 regraded, 0 skipped; 8 judge call(s)" in out
    assert set(Grading.objects.values_list("pass_rate", flat=True)) == {0.0}
    history = {h.run_id: h for h in GradingHistory.objects.all()}
    assert set(history) == set(old)
    for run_id, (pass_rate, was) in old.items():
        kept = history[run_id]
        assert kept.pass_rate == pass_rate and kept.replaced_by["judge_models"] == [JUDGE]
        assert {
            r["assertion_id"]: (r["passed"], r["evidence"], r["judge_model"])
            for r in kept.snapshot["results"]
        } == was
    after = {c["name"]: c["score"]["mean"] for c in client.get(api).json()["conditions"]}
    assert after == {"with_skill": 0.0, "without_skill": 0.0}
    benchmark = client.get(api + "/benchmark").json()
    assert benchmark["run_summary"]["with_skill"]["pass_rate"]["mean"] == 0.0
    html = client.get(page).content.decode()
    assert page_scores(html) == ["0.00", "0.00"]
    # Every verdict is now this judge's, so it is the iteration's judge.
    assert "judge " + JUDGE in html and "graded or regraded by evalsite" in html


def test_command_and_diff_checks_are_kept_and_said_so_per_kind(
    demo: Iteration, fake_api_env: FakeAnthropic
) -> None:
    fake_api_env.script = verdicts(False)
    first = Run.objects.get(condition__name="with_skill", run_index=1)

    out = regrade(DEMO, "1")

    assert "1 graded, 3 regraded, 0 skipped; 4 judge call(s)" in out
    assert (
        "  command_check: 3 run(s) kept their recorded result — the task folder is gone; "
        "only judge and transcript assertions can be regraded"
    ) in out.splitlines()
    assert "  diff_scope: 3 run(s) kept their recorded result" in out
    assert "  command_check: 1 run(s) had no result and are recorded as not graded" in out
    assert "  diff_scope: 1 run(s) graded from their recorded diff-scope.json" in out
    now = results(first)
    assert now["a1"] == (False, "fake judge on 'Is it done?'", demo.judge_model)
    assert now["a2"][:2] == (True, 'matched ordinal 1: Read {"file_path":"README.md"}')
    assert now["c1"] == (True, "evidence for c1", "") and now["d1"][:2] == (
        True,
        "evidence for d1",
    )
    # The transcript shows no Skill call: the recomputed meta result says so.
    assert Grading.objects.get(run=first).skill_invoked is False

    interrupted = Run.objects.get(condition__name="with_skill", run_index=2)
    graded = results(interrupted)
    assert graded["c1"][0] is False and "needs the run's task folder" in graded["c1"][1]
    assert graded["d1"][:2] == (True, "files touched: 1 <= 1; hunks: 1")
    result = AssertionResult.objects.get(grading__run=interrupted, assertion_id="c1")
    assert result.confidence == 0.0 and result.needs_review
    grading = interrupted.grading
    assert (grading.passed, grading.total) == (2, 4)  # a2 and d1
    assert grading.regraded["not_graded"] == ["c1"]


def test_one_assertion_is_regraded_alone_and_overrides_of_the_others_still_count(
    demo: Iteration, fake_api_env: FakeAnthropic, user
) -> None:
    fake_api_env.script = verdicts(False)
    run = Run.objects.get(condition__name="without_skill", run_index=1)
    a1 = AssertionResult.objects.get(grading__run=run, assertion_id="a1")
    a2 = AssertionResult.objects.get(grading__run=run, assertion_id="a2")
    override(result=a1, author=user, passed=False, reason="not really done")
    override(result=a2, author=user, passed=True, reason="it did read")
    before = {r.grading.run_id: results(r.grading.run) for r in AssertionResult.objects.all()}

    out = regrade(DEMO, "1", "--assertion", "a1", "--judge-model", JUDGE)

    # Three graded runs of four; the interrupted one is not graded piecemeal.
    assert "0 graded, 3 regraded, 1 skipped; 3 judge call(s)" in out
    assert "ungraded: 1 run(s) left alone" in out
    for run_id, was in before.items():
        now = results(Run.objects.get(pk=run_id))
        assert now["a1"] == (False, "fake judge on 'Is it done?'", JUDGE)
        assert {k: v for k, v in now.items() if k != "a1"} == {
            k: v for k, v in was.items() if k != "a1"
        }
    a1.refresh_from_db()
    a2.refresh_from_db()
    assert a1.override_passed is None and a2.override_passed is True
    # The review of the replaced verdict stays, as a record, and no longer counts.
    review = Review.objects.get(assertion_id="a1")
    assert review.assertion_result is None and review.text == "not really done"
    grading = Grading.objects.get(run=run)
    # a1 as the judge says, a2 as the reviewer said, c1 and d1 as recorded.
    assert (grading.passed, grading.total) == (3, 4)
    assert grading.original_summary == {"passed": 2, "failed": 2, "total": 4, "pass_rate": 0.5}
    demo.refresh_from_db()
    assert "1 assertion result overridden by reviewers" in " ".join(
        messages(demo.validity_warnings)
    )


def test_it_exits_2_without_an_api_key_before_any_call(
    demo: Iteration, fake_api_env: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    stamp = Iteration.objects.get(pk=demo.pk).updated_at

    with pytest.raises(CommandError) as error:
        regrade(DEMO, "1")

    assert error.value.returncode == 2
    assert str(error.value) == (
        f"ANTHROPIC_API_KEY is not set: regrading {demo} asks the judge (a1)"
    )
    assert fake_api_env.calls == 0
    assert Iteration.objects.get(pk=demo.pk).updated_at == stamp
    assert not GradingHistory.objects.exists()


def test_a_transcript_assertion_needs_no_key(
    demo: Iteration, fake_api_env: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")

    out = io.StringIO()
    call_command("regrade", DEMO, "1", "--assertion", "a2", verbosity=0, stdout=out)

    assert out.getvalue() == "" and fake_api_env.calls == 0
    assert GradingHistory.objects.count() == 3
    assert {r.passed for r in AssertionResult.objects.filter(assertion_id="a2")} == {True}


def test_a_judge_that_cannot_be_reached_saves_nothing(
    demo: Iteration, fake_api_env: FakeAnthropic
) -> None:
    fake_api_env.script = [
        judge_verdict(False, "first", 0.9),
        api_error(400, "invalid_request_error", "model: not found"),
    ]
    before = {g.pk: results(g.run) for g in Grading.objects.all()}

    with pytest.raises(CommandError) as error:
        regrade(DEMO, "1", "--judge-model", "no-such-model")

    assert error.value.returncode == 2
    assert "nothing was saved" in str(error.value) and "\n" not in str(error.value)
    assert {g.pk: results(g.run) for g in Grading.objects.all()} == before
    assert not GradingHistory.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no-skill", "1"], "no skill named 'no-skill'"),
        ([DEMO, "7"], f"{DEMO} has no iteration '7'"),
        ([DEMO, "1", "--assertion", "zz"], "has no assertion 'zz' in its eval definitions"),
        ([DEMO, "1", "--assertion", "a1", "--only-missing"], "give one of them"),
    ],
)
def test_bad_input_is_refused_in_one_line(
    demo: Iteration, fake_api_env: FakeAnthropic, args: list[str], message: str
) -> None:
    with pytest.raises(CommandError) as error:
        regrade(*args)

    assert message in str(error.value) and "\n" not in str(error.value)
    assert error.value.returncode == 1
    assert fake_api_env.calls == 0


def test_a_run_re_imported_while_it_was_being_regraded_keeps_what_the_import_wrote(
    demo: Iteration, fake_api_env: FakeAnthropic
) -> None:
    fake_api_env.script = verdicts(False)
    first = Run.objects.get(condition__name="with_skill", run_index=1)
    recorded = results(first)

    def reimport_first_run(done: int, total: int, name: str) -> None:
        # Judging happens before anything is written; an import may land in between.
        if done == 1:
            Run.objects.filter(pk=first.pk).update(content_hash="re-imported")

    report = regrade_iteration(
        iteration=demo,
        only_missing=False,
        judge_model=None,
        assertion_id=None,
        client=fake_api_env.client(),
        progress=reimport_first_run,
    )

    assert (report.graded, report.regraded, report.skipped) == (1, 2, 1)
    assert "changed: 1 run(s) skipped — re-imported while being regraded" in report.notes
    assert results(first) == recorded
    assert not GradingHistory.objects.filter(run=first).exists()


def test_a_re_import_that_replaces_a_regraded_grading_keeps_it_in_history(
    tmp_path: Path, fake_api_env: FakeAnthropic
) -> None:
    folder = skill_creator_iteration(tmp_path)
    (folder / "eval-0-summarise" / "with_skill" / "run-2" / "grading.json").unlink()
    import_workspace([folder.parent])
    fake_api_env.script = verdicts(True)
    regrade(CREATOR, "1", "--only-missing", "--judge-model", JUDGE)
    run = Run.objects.get(condition__name="with_skill", run_index=2)
    assert run.grading.regraded is not None and not GradingHistory.objects.exists()

    # The grader ran after all: the files now hold a grading for that run.
    source = folder / "eval-0-summarise" / "with_skill" / "run-1" / "grading.json"
    (folder / "eval-0-summarise" / "with_skill" / "run-2" / "grading.json").write_bytes(
        source.read_bytes()
    )
    import_workspace([folder.parent])

    [kept] = GradingHistory.objects.filter(run__condition__name="with_skill", run__run_index=2)
    assert kept.replaced_by == {"by": "re-import", "source": str(folder)}
    assert kept.snapshot["regraded"]["judge_models"] == [JUDGE]
    assert {r["judge_model"] for r in kept.snapshot["results"]} == {JUDGE}
    assert Run.objects.get(pk=run.pk).grading.regraded is None
