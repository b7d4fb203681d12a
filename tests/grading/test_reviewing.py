"""Human review: notes, and overrides that change the statistics but keep the original."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from grading.reviewing import ReviewError, override
from runs.importing import import_workspace
from runs.models import AssertionResult, Iteration, Review, Run
from runs.reading.benchmark import eval_magic_benchmark
from runs.reading.summaries import summarise_iterations
from runs.warnings import messages
from tests.factories import eval_magic_iteration

pytestmark = pytest.mark.django_db


@pytest.fixture
def iteration(tmp_path: Path) -> Iteration:
    # with_skill passes a1 and fails a2; without_skill fails both: delta +0.5.
    eval_magic_iteration(
        tmp_path,
        cells={
            ("alpha", "with_skill"): [{"a1": True, "a2": False}],
            ("alpha", "without_skill"): [{"a1": False, "a2": False}],
        },
    )
    import_workspace([tmp_path])
    return Iteration.objects.get()


def result_of(condition: str, assertion: str) -> AssertionResult:
    return AssertionResult.objects.get(
        grading__run__condition__name=condition, assertion_id=assertion
    )


def run_url(condition: str) -> str:
    return (
        Run.objects.select_related("iteration__skill", "condition")
        .get(condition__name=condition)
        .get_absolute_url()
    )


def test_an_override_changes_the_statistics_and_keeps_the_original(iteration, user) -> None:
    before = eval_magic_benchmark(iteration)["run_summary"]["with_skill"]["pass_rate"]["mean"]
    result = result_of("with_skill", "a2")

    outcome = override(result=result, author=user, passed=True, reason="the file was written")

    assert outcome.changed
    result.refresh_from_db()
    assert result.passed is False  # what the grader said
    assert result.override_passed is True
    grading = result.grading
    grading.refresh_from_db()
    assert (grading.passed, grading.pass_rate) == (2, 1.0)
    assert grading.original_summary == {"passed": 1, "failed": 1, "total": 2, "pass_rate": 0.5}
    iteration.refresh_from_db()
    after = eval_magic_benchmark(iteration)
    assert (before, after["run_summary"]["with_skill"]["pass_rate"]["mean"]) == (0.5, 1.0)
    assert "1 assertion result overridden by reviewers" in " ".join(after["validity_warnings"])
    assert summarise_iterations([iteration])[iteration.pk].delta.mean == pytest.approx(1.0)
    review = Review.objects.get()
    assert (review.author, review.original_passed, review.overridden_passed) == (user, False, True)
    assert review.text == "the file was written"


def test_overriding_back_to_the_graders_verdict_restores_the_figures(iteration, user) -> None:
    result = result_of("with_skill", "a2")
    override(result=result, author=user, passed=True, reason="looks right")
    override(result=result, author=user, passed=False, reason="no, the judge was right")

    result.refresh_from_db()
    assert result.override_passed is None
    assert (result.grading.passed, result.grading.pass_rate) == (1, 0.5)
    iteration.refresh_from_db()
    assert not [w for w in messages(iteration.validity_warnings) if "overridden" in w]
    assert Review.objects.count() == 2  # both decisions stay on record


def test_an_override_needs_a_reason_and_a_substantive_result(iteration, user) -> None:
    with pytest.raises(ReviewError, match="needs some text"):
        override(result=result_of("with_skill", "a1"), author=user, passed=False, reason="  ")
    meta = AssertionResult.objects.filter(is_meta=True).first()
    with pytest.raises(ReviewError, match="cannot be overridden"):
        override(result=meta, author=user, passed=False, reason="no")
    assert not Review.objects.exists()


def test_a_reviewer_overrides_from_the_run_page(iteration, client: Client) -> None:
    result = result_of("with_skill", "a2")
    url = run_url("with_skill")
    override_url = f"{url}results/{result.pk}/override/"

    response = client.post(override_url, {"verdict": "pass", "reason": "judge misread <b>it</b>"})

    assert response.status_code == 302
    html = client.get(url).content.decode()
    assert "overridden · grader said <s>FAIL</s>" in html
    assert "after overrides; graded 1/2" in html
    assert "judge misread &lt;b&gt;it&lt;/b&gt;" in html
    assert "reviewer" in html
    iteration_html = client.get(iteration.get_absolute_url()).content.decode()
    assert "overridden by reviewers" in iteration_html


def test_a_reviewer_adds_a_note_and_a_bad_form_is_refused(iteration, client: Client) -> None:
    url = run_url("without_skill")
    assert client.post(f"{url}notes/", {"text": "flaky network"}).status_code == 302
    assert "flaky network" in client.get(url).content.decode()
    refused = client.post(f"{url}notes/", {"text": ""})
    assert refused.status_code == 400
    assert "text: This field is required." in refused.content.decode()
    assert Review.objects.count() == 1


def test_the_needs_review_queue_lists_low_confidence_results(iteration, client: Client) -> None:
    AssertionResult.objects.filter(assertion_id="a2").update(confidence=0.55, grader="llm_judge")
    html = client.get("/skills/demo-skill/review/").content.decode()
    assert html.count("<code>a2</code>") == 2
    assert "<code>a1</code>" not in html
    AssertionResult.objects.update(confidence=0.9)
    assert "Nothing to review" in client.get("/skills/demo-skill/review/").content.decode()


def test_a_reimport_that_regrades_a_run_keeps_the_review_as_a_record(
    iteration, user, tmp_path: Path
) -> None:
    override(result=result_of("with_skill", "a2"), author=user, passed=True, reason="fine")
    eval_magic_iteration(
        tmp_path,
        cells={
            ("alpha", "with_skill"): [{"a1": True, "a2": True}],
            ("alpha", "without_skill"): [{"a1": False, "a2": False}],
        },
    )
    import_workspace([tmp_path])

    review = Review.objects.get()
    assert review.assertion_result is None
    assert review.assertion_id == "a2"
    iteration.refresh_from_db()
    assert not [w for w in messages(iteration.validity_warnings) if "overridden" in w]


def test_the_skill_page_links_reviewers_to_the_queue(iteration, client: Client, settings) -> None:
    assert "/skills/demo-skill/review/" in client.get("/skills/demo-skill/").content.decode()
    settings.EVALSITE_PUBLIC_READ = True  # an anonymous reader sees the page, not the queue
    anonymous = Client().get("/skills/demo-skill/")
    assert anonymous.status_code == 200
    assert "/review/" not in anonymous.content.decode()
