"""Trigger evals through the JSON API and the pages: the same numbers, escaped, shareable."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from accounts.models import ApiToken
from runs.importing import import_workspace
from tests.factories import write_json

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("q")</script>'


def result(description: str, counts: list[tuple[str, bool, int]]) -> dict:
    rows = [
        {"query": q, "should_trigger": s, "triggers": t, "runs": 3, "trigger_rate": t / 3}
        for q, s, t in counts
    ]
    return {"skill_name": "changelog", "description": description, "results": rows}


@pytest.fixture
def imported(tmp_path: Path) -> None:
    folder = tmp_path / "changelog"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: changelog\ndescription: Old.\n---\n")
    before = [("release notes", True, 1), (HOSTILE, True, 0), ("weather", False, 2)]
    after = [("release notes", True, 3), (HOSTILE, True, 2), ("weather", False, 0)]
    write_json(folder / "evals" / "a-trigger-results.json", result("Use for changelogs.", before))
    write_json(folder / "evals" / "b-trigger-results.json", result(f"Now {HOSTILE}", after))
    import_workspace([tmp_path])


@pytest.fixture
def api(user) -> Client:
    token = ApiToken(user=user, name="CI")
    secret = token.set_secret()
    token.save()
    return Client(headers={"Authorization": f"Bearer {secret}"})


def test_the_api_lists_each_description_with_its_rates(api: Client, imported) -> None:
    listed = api.get("/api/skills/changelog/triggers").json()
    assert [t["number"] for t in listed] == [1, 2]
    recall = listed[0]["summaries"]["all"]["recall"]
    assert recall["value"] == pytest.approx(1 / 6) and recall["n"] == 2
    assert listed[1]["description"] == f"Now {HOSTILE}"


def test_the_api_gives_one_trigger_iteration_s_queries(api: Client, imported) -> None:
    detail = api.get("/api/skills/changelog/triggers/2").json()
    assert [(q["query"], q["triggers"], q["passed"]) for q in detail["queries"]] == [
        (HOSTILE, 2, True),
        ("release notes", 3, True),
        ("weather", 0, True),
    ]
    assert detail["queries"][1]["interval"]["high"] == 1.0
    assert api.get("/api/skills/changelog/triggers/9").status_code == 404
    assert api.get("/api/skills/nope/triggers").status_code == 404


def test_the_api_compares_two_descriptions(api: Client, imported) -> None:
    compared = api.get("/api/skills/changelog/triggers-compare?a=1&b=2").json()
    assert compared["delta"]["mean"] == pytest.approx(2 / 3)
    assert "3 queries" in compared["verdict"]
    assert len(compared["flips"]) == 3
