"""Cached pages follow the data: one generation, moved by everything that writes it.

Tests run with a real local-memory cache (tests/settings.py), so a page served from the
cache after a change fails here. Each change goes through the way users make it: an
import, a reviewer's note or override, an edit or a deletion in the admin.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from grading.reviewing import add_note, override
from runs.importing import import_workspace
from runs.models import AssertionResult, EvalCase, Iteration, Run, Skill
from tests.admin_forms import admin_save
from tests.factories import eval_magic_iteration

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SKILL = "taming-flaky-tests"


@pytest.fixture
def sample() -> None:
    import_workspace([ROOT / "runs" / "sample"])


@pytest.fixture
def admin_client(db: None) -> Client:
    admin = get_user_model().objects.create_superuser("boss", password="not used")
    logged_in = Client()
    logged_in.force_login(admin)
    return logged_in


def main(client: Client, url: str, status: int = 200) -> str:
    """The page's <main>, where the cached regions are (the header holds a CSRF token)."""
    response = client.get(url)
    assert response.status_code == status, (url, response.content[:300])
    html = response.content.decode()
    return html.split("<main>", 1)[1] if "<main>" in html else html


def latest() -> Iteration:
    return Iteration.objects.filter(skill__name=SKILL).order_by("-number").first()


def fail_every_result_of(iteration: Iteration, author) -> None:
    """A reviewer overrides every passing result of the iteration to FAIL."""
    passing = AssertionResult.objects.filter(
        grading__run__iteration=iteration, is_meta=False, passed=True
    )
    for result in passing:
        override(result=result, author=author, passed=False, reason="judge was wrong")


def test_a_repeated_view_is_served_from_the_cache(client: Client, sample) -> None:
    url = f"/skills/{SKILL}/iterations/{latest().number}/"
    first = main(client, url)
    with CaptureQueriesContext(connection) as again:
        assert main(client, url) == first

    # The session, the user, the skill, the iteration and the generation: no statistics.
    assert len(again) <= 5, [q["sql"][:80] for q in again]


def test_an_override_shows_its_figures_on_every_page(client: Client, sample, user) -> None:
    iteration = latest()
    pages = {
        "overview": "/",
        "skill": f"/skills/{SKILL}/",
        "iteration": f"/skills/{SKILL}/iterations/{iteration.number}/",
    }
    before = {name: main(client, url) for name, url in pages.items()}
    treatment = iteration.conditions.get(role="treatment").name
    failed = f'<span class="cond">{treatment}</span> 0.00'
    assert not any(failed in html for html in before.values())

    fail_every_result_of(iteration, user)

    assert failed in main(client, pages["overview"])
    assert failed in main(client, pages["skill"])
    assert "overridden by reviewers" in main(client, pages["iteration"])


def test_the_next_iteration_s_page_follows_a_change_to_the_one_before(
    client: Client, sample, user
) -> None:
    iteration = latest()
    url = f"/skills/{SKILL}/iterations/{iteration.number}/"
    assert "0.00 →" not in main(client, url)

    fail_every_result_of(
        Iteration.objects.get(skill=iteration.skill, number=iteration.number - 1), user
    )

    assert "0.00 →" in main(client, url)  # the "vs #3" column reads #3's new scores


def test_the_eval_page_shows_a_new_note_or_override_at_once(client: Client, sample, user) -> None:
    run = (
        Run.objects.filter(iteration=latest(), grading__results__is_meta=False)
        .select_related("iteration__skill", "condition")
        .first()
    )
    eval_url = f"/skills/{SKILL}/iterations/{run.iteration.number}/evals/{run.eval_id}/"
    assert "a fresh note" not in main(client, eval_url)

    add_note(run=run, author=user, text="a fresh note")
    assert "a fresh note" in main(client, eval_url)

    result = run.grading.results.filter(is_meta=False).first()
    override(result=result, author=user, passed=not result.passed, reason="judge was wrong")
    assert "overridden · grader said" in main(client, eval_url)


def test_an_override_that_repeats_the_verdict_shows_at_once(client: Client, sample, user) -> None:
    run = Run.objects.filter(iteration=latest(), grading__results__is_meta=False).first()
    iteration_url = f"/skills/{SKILL}/iterations/{run.iteration.number}/"
    eval_url = f"{iteration_url}evals/{run.eval_id}/"
    assert "the grader was right" not in main(client, eval_url)
    assert "the grader was right" not in main(client, iteration_url)

    result = run.grading.results.filter(is_meta=False).first()
    outcome = override(
        result=result, author=user, passed=result.passed, reason="the grader was right"
    )

    assert not outcome.changed  # no figure moved, yet the review is new
    assert "the grader was right" in main(client, eval_url)
    assert "the grader was right" in main(client, iteration_url)


def test_a_cached_comparison_follows_an_override(client: Client, sample, user) -> None:
    iteration = latest()
    url = f"/skills/{SKILL}/compare/?a={iteration.number - 1}&b={iteration.number}"
    before = main(client, url)
    assert main(client, url) == before

    fail_every_result_of(iteration, user)

    assert main(client, url) != before


def test_importing_an_older_iteration_reorders_every_cached_page_and_moves_no_address(
    client: Client, tmp_path: Path
) -> None:
    def write(label: str, day: int) -> Path:
        return eval_magic_iteration(
            tmp_path / label, skill="reordered", label=label, timestamp=f"2026-05-0{day}T10:00:00Z"
        )

    import_workspace([write("iteration-2", 2), write("iteration-3", 3)])
    base = "/skills/reordered/"
    assert "Compare with" not in main(client, f"{base}iterations/1/")
    assert "#2 iteration-3" in main(client, f"{base}iterations/2/")
    skill_page = main(client, base)
    assert skill_page.index("#1 iteration-2") < skill_page.index("#2 iteration-3")

    import_workspace([write("iteration-1", 1)])  # generated first: shown first, numbered #3

    first = main(client, f"{base}iterations/1/")
    assert "#1 iteration-2" in first and "Compare with #3 iteration-1" in first
    assert "#2 iteration-3" in main(client, f"{base}iterations/2/")
    assert f"{base}iterations/2/evals/alpha/with_skill/1/" in main(
        client, f"{base}iterations/2/evals/alpha/"
    )
    skill_page = main(client, base)
    assert (
        skill_page.index("#3 iteration-1")
        < skill_page.index("#1 iteration-2")
        < skill_page.index("#2 iteration-3")
    )


# --- the admin ---------------------------------------------------------------------------


def admin_delete(client: Client, obj: object) -> None:
    meta = obj._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_delete", args=[obj.pk])
    assert client.post(url, {"post": "yes"}).status_code == 302


def test_admin_edits_of_skills_iterations_evals_and_runs_show_at_once(
    client: Client, admin_client: Client, sample
) -> None:
    iteration = latest()
    iteration_url = f"/skills/{SKILL}/iterations/{iteration.number}/"
    run = iteration.runs.select_related("eval_case").order_by("eval_id", "pk").first()
    eval_url = f"{iteration_url}evals/{run.eval_id}/"
    for url in ("/", f"/skills/{SKILL}/", iteration_url, eval_url):
        main(client, url)  # cached

    admin_save(admin_client, Skill.objects.get(name=SKILL), description="Edited in the admin")
    assert "Edited in the admin" in main(client, "/")

    admin_save(admin_client, iteration, label="relabelled-in-admin")
    assert "relabelled-in-admin" in main(client, iteration_url)
    assert "relabelled-in-admin" in main(client, f"/skills/{SKILL}/")

    admin_save(admin_client, run.eval_case, prompt="A prompt edited in the admin")
    assert "A prompt edited in the admin" in main(client, eval_url)

    admin_save(admin_client, run, final_message="A final message edited in the admin")
    assert "A final message edited in the admin" in main(client, eval_url)
    saved = Run.objects.get(pk=run.pk)  # the rest of the form went back as it came
    assert (saved.conversation, saved.artifacts) == (run.conversation, run.artifacts)


def test_admin_deletions_show_at_once(client: Client, admin_client: Client, sample) -> None:
    iteration = latest()
    runs = iteration.runs.order_by("eval_id", "pk")
    first = runs.first()
    eval_url = f"/skills/{SKILL}/iterations/{iteration.number}/evals/{first.eval_id}/"
    assert f'id="run-{first.condition.name}-{first.run_index}"' in main(client, eval_url)

    for run in runs.filter(eval_id=first.eval_id):
        admin_delete(admin_client, run)
    main(client, eval_url, status=404)

    assert f"#{iteration.number} {iteration.label}" in main(client, "/")
    admin_delete(admin_client, iteration)
    assert f"#{iteration.number} {iteration.label}" not in main(client, "/")


def test_admin_bulk_deletion_shows_at_once(client: Client, admin_client: Client, sample) -> None:
    assert "changelog-from-commits" in main(client, "/")
    skill = Skill.objects.get(name="changelog-from-commits")

    response = admin_client.post(
        reverse("admin:runs_skill_changelist"),
        {"action": "delete_selected", "_selected_action": [skill.pk], "post": "yes"},
    )

    assert response.status_code == 302
    assert not Skill.objects.filter(pk=skill.pk).exists()
    assert "changelog-from-commits" not in main(client, "/")


def test_an_admin_edit_of_an_eval_case_tag_updates_the_iteration_filters(
    client: Client, admin_client: Client, sample
) -> None:
    iteration = latest()
    url = f"/skills/{SKILL}/iterations/{iteration.number}/"
    assert "edited-tag" not in main(client, url)
    case = EvalCase.objects.filter(runs__iteration=iteration).order_by("eval_id").first()

    admin_save(admin_client, case, tags='["edited-tag"]')

    assert '<span class="tag">edited-tag</span>' in main(client, url)
