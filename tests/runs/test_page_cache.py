"""Cached page data follows the data it was computed from.

Tests run with the dummy cache; these switch on a real one. Whatever changes an
iteration's figures (a re-import, a reviewer's override) saves it, which bumps its
updated_at: every cached page must show the new figures at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from grading.models import Grading
from grading.reviewing import add_note, override
from runs.importing import import_workspace
from runs.models import Iteration, Run
from runs.overview import skill_rows, trend_points
from runs.reports import iteration_detail

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SKILL = "taming-flaky-tests"


@pytest.fixture
def cached(settings) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "evalsite-page-cache-tests",
        }
    }
    cache.clear()
    import_workspace([ROOT / "runs" / "sample"])


def latest() -> Iteration:
    return Iteration.objects.filter(skill__name=SKILL).order_by("-number").first()


def fail_every_run_of(iteration: Iteration) -> None:
    """What overriding every assertion to FAIL does to the figures, and the bump it makes."""
    Grading.objects.filter(run__iteration=iteration).update(pass_rate=0.0)
    Iteration.objects.filter(pk=iteration.pk).update(updated_at=timezone.now())


def treatment_score(summary) -> float:
    return summary.treatment.score.mean


def test_a_saved_iteration_shows_its_new_figures_on_every_page(cached, client: Client) -> None:
    iteration = latest()
    before = {
        "detail": treatment_score(iteration_detail(iteration).summary),
        "trend": treatment_score(trend_points(iteration.skill)[1][-1]),
        "overview": treatment_score(next(r for r in skill_rows() if r.skill.name == SKILL).summary),
    }
    assert set(before.values()) != {0.0}
    treatment = iteration_detail(iteration).summary.treatment.name
    newest_row = f'<span class="cond">{treatment}</span> 0.00'
    assert newest_row not in client.get(f"/skills/{SKILL}/").content.decode()
    # Served from the cache the second time: the same figures.
    assert treatment_score(iteration_detail(latest()).summary) == before["detail"]

    fail_every_run_of(iteration)

    iteration = latest()
    assert treatment_score(iteration_detail(iteration).summary) == 0.0
    assert treatment_score(trend_points(iteration.skill)[1][-1]) == 0.0
    overview = next(r for r in skill_rows() if r.skill.name == SKILL)
    assert treatment_score(overview.summary) == 0.0
    html = client.get(f"/skills/{SKILL}/iterations/{iteration.number}/").content.decode()
    assert "0.00" in html
    assert newest_row in client.get(f"/skills/{SKILL}/").content.decode()


def test_the_next_iteration_s_page_follows_a_change_to_the_one_before(cached) -> None:
    iteration = latest()
    previous = Iteration.objects.get(skill=iteration.skill, number=iteration.number - 1)
    shown = {row.eval_id: row.previous_treatment for row in iteration_detail(iteration).rows}
    assert any(score for score in shown.values())

    fail_every_run_of(previous)

    rows = iteration_detail(latest()).rows
    assert {row.previous_treatment for row in rows if row.eval_id in shown} == {0.0}


def test_the_eval_page_shows_a_new_note_or_override_at_once(cached, client: Client, user) -> None:
    run = (
        Run.objects.filter(iteration=latest(), grading__results__is_meta=False)
        .select_related("iteration__skill", "condition")
        .first()
    )
    eval_url = f"/skills/{SKILL}/iterations/{run.iteration.number}/evals/{run.eval_id}/"
    assert "a fresh note" not in client.get(eval_url).content.decode()  # now cached

    add_note(run=run, author=user, text="a fresh note")
    assert "a fresh note" in client.get(eval_url).content.decode()

    result = run.grading.results.filter(is_meta=False).first()
    override(result=result, author=user, passed=not result.passed, reason="judge was wrong")
    assert "overridden · grader said" in client.get(eval_url).content.decode()


def test_a_cached_comparison_follows_a_saved_iteration(cached, client: Client) -> None:
    iteration = latest()
    url = f"/skills/{SKILL}/compare/?a={iteration.number - 1}&b={iteration.number}"

    def main() -> str:  # the header's masked CSRF token differs on every response
        return client.get(url).content.decode().split("<main>")[1]

    before = main()
    assert main() == before  # served from the cache
    assert "Holm" in before or "badge" in before

    fail_every_run_of(iteration)

    assert main() != before
