"""Pages ask a fixed number of queries: the same for a small dataset and one 10× larger."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from bench.generate import generate_workspace, skill_names
from runs.importing import import_workspace
from runs.models import Iteration, Run, Skill

pytestmark = pytest.mark.django_db


def page_urls() -> dict[str, str]:
    """One URL per page type for the generated skill, its latest iteration and an eval."""
    skill = skill_names(1)[0]
    latest = Iteration.objects.filter(skill__name=skill).order_by("-number").first()
    run = Run.objects.filter(iteration=latest).select_related("condition").first()
    base = f"/skills/{skill}/iterations/{latest.number}/"
    return {
        "overview": "/",
        "skill": f"/skills/{skill}/",
        "iteration": base,
        "iteration-filtered": base + "?only=failures&only=flaky&change=improved&sort=-delta",
        "compare": f"/skills/{skill}/compare/?a=1&b={latest.number}",
        "eval": base + f"evals/{run.eval_id}/",
        "run": base + f"evals/{run.eval_id}/{run.condition.name}/{run.run_index}/",
        "conversation": base + f"evals/{run.eval_id}/{run.condition.name}/1/conversation/",
        "benchmark": base + "benchmark.json",
    }


def queries_per_page(client: Client) -> dict[str, int]:
    counts = {}
    for name, url in page_urls().items():
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url)
        assert response.status_code == 200, (name, url)
        counts[name] = len(captured)
    return counts


def load(tmp_path: Path, **scale: int) -> None:
    Skill.objects.all().delete()
    generate_workspace(tmp_path, skills=2, events=6, workers=1, **scale)
    import_workspace([tmp_path])


def test_queries_do_not_grow_with_the_data(client: Client, tmp_path: Path) -> None:
    load(tmp_path / "small", iterations=2, evals=3, runs=1, assertions=2)
    small = queries_per_page(client)

    load(tmp_path / "large", iterations=20, evals=6, runs=2, assertions=4)
    large = queries_per_page(client)

    assert large == small
