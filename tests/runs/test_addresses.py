"""Stable addresses: a number, once handed out, names the same results whatever is imported
or deleted after; display order follows generation time; moved numbers redirect."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse

from accounts.sharing import share_view
from runs.importing import import_workspace
from runs.importing.history import import_history
from runs.models import IssuedNumber, Iteration, Skill, TriggerIteration
from tests.factories import eval_magic_iteration, skill_folder, trigger_result, write_json
from tests.runs.test_import_history import Clone, promote

pytestmark = pytest.mark.django_db

SKILL = "stable"
BASE = f"/skills/{SKILL}/"


def workspace(root: Path, name: str, days: list[int], *, skill: str = SKILL) -> Path:
    """A workspace `name` holding iteration-1, -2… generated on May `days` (one each)."""
    for number, day in enumerate(days, start=1):
        eval_magic_iteration(
            root / name,
            skill=skill,
            label=f"iteration-{number}",
            timestamp=f"2026-05-{day:02d}T10:00:00Z",
        )
    return root / name / skill


def addresses() -> dict[str, int]:
    """source_key → number, for every iteration of the skill."""
    return dict(Iteration.objects.filter(skill__name=SKILL).values_list("source_key", "number"))


def shown() -> list[tuple[str, int]]:
    """(source_key, number) in display order."""
    return list(
        Iteration.objects.filter(skill__name=SKILL)
        .in_display_order()
        .values_list("source_key", "number")
    )


def test_importing_older_results_changes_no_address_and_shows_them_first(
    tmp_path: Path,
) -> None:
    import_workspace([workspace(tmp_path, "ws-a", [10, 11, 12])])
    before = addresses()
    assert sorted(before.values()) == [1, 2, 3]

    import_workspace([workspace(tmp_path, "ws-b", [1, 2])])  # generated before all of ws-a's

    after = addresses()
    assert {key: after[key] for key in before} == before
    assert sorted(after.values()) == [1, 2, 3, 4, 5]
    assert [number for _, number in shown()] == [4, 5, 1, 2, 3]
    assert list(Iteration.objects.filter(skill__name=SKILL).values_list("position", flat=True))
    assert sorted(Iteration.objects.values_list("position", flat=True)) == [1, 2, 3, 4, 5]


def test_reimporting_the_same_or_changed_results_keeps_their_number(tmp_path: Path) -> None:
    folder = workspace(tmp_path, "ws", [3, 4])
    import_workspace([folder])
    before = addresses()

    import_workspace([folder])  # unchanged
    write_json(folder / "iteration-1" / "eval-alpha" / "with_skill" / "run.json", {"x": 1})
    eval_magic_iteration(
        tmp_path / "ws",
        skill=SKILL,
        label="iteration-1",
        timestamp="2026-05-03T10:00:00Z",
        cells={("alpha", "with_skill"): [{"a1": False}], ("alpha", "without_skill"): [None]},
    )
    report = import_workspace([folder])

    assert report.counts["iterations"]["updated"] == 1
    assert addresses() == before


def test_a_history_import_changes_no_address(tmp_path: Path) -> None:
    clone = Clone(tmp_path / "repo")
    skill = skill_folder(clone.path / "plugins" / "tools", name=SKILL)
    promote(skill, timestamp="2026-05-10T10:00:00Z", iteration="iteration-5", label="late")
    clone.commit("Promote a late baseline")
    import_history([clone.path])
    late = addresses()
    assert list(late.values()) == [1]

    # Older results from a workspace, then the history again with one more promotion.
    import_workspace([workspace(tmp_path, "ws", [1, 2])])
    promote(skill, timestamp="2026-05-20T10:00:00Z", iteration="iteration-6", label="later")
    clone.commit("Promote a later baseline")
    import_history([clone.path])

    after = addresses()
    assert {key: after[key] for key in late} == late
    assert sorted(after.values()) == [1, 2, 3, 4]
    assert [number for _, number in shown()] == [2, 3, 1, 4]


def test_a_deleted_iteration_keeps_its_number_from_others_and_gets_it_back(
    tmp_path: Path, client: Client
) -> None:
    import_workspace([workspace(tmp_path, "ws", [1, 2, 3])])
    Iteration.objects.get(skill__name=SKILL, number=3).delete()  # the highest, as the admin does
    Iteration.objects.get(skill__name=SKILL, number=2).delete()

    page = client.get(f"{BASE}iterations/3/")
    assert page.status_code == 404
    assert "iteration #3 (iteration-3) was removed" in page.content.decode()
    assert client.get(f"{BASE}iterations/3/evals/alpha/").status_code == 404
    assert client.get(f"{BASE}iterations/9/").status_code == 404
    assert "has no iteration #9" in client.get(f"{BASE}iterations/9/").content.decode()

    import_workspace([workspace(tmp_path, "other", [5])])  # new results: a new number
    assert Iteration.objects.get(source_path__contains="other").number == 4

    import_workspace([workspace(tmp_path, "ws", [1, 2, 3])])  # the deleted ones come back
    assert addresses() == {
        "iteration-1@2026-05-01T10:00:00Z": 1,
        "iteration-2@2026-05-02T10:00:00Z": 2,
        "iteration-3@2026-05-03T10:00:00Z": 3,
        "iteration-1@2026-05-05T10:00:00Z": 4,
    }
    assert client.get(f"{BASE}iterations/3/").status_code == 200


def test_a_deleted_trigger_iterations_number_is_not_given_to_another(tmp_path: Path) -> None:
    skill = skill_folder(tmp_path / "skills", name=SKILL)
    rows = [("write release notes", True, 3), ("the weather", False, 0)]
    first = write_json(skill / "evals" / "first.json", trigger_result("One.", rows, skill=SKILL))
    import_workspace([skill])
    trigger = TriggerIteration.objects.get()
    assert trigger.number == 1
    trigger.delete()

    write_json(skill / "evals" / "second.json", trigger_result("Two.", rows, skill=SKILL))
    first.unlink()
    import_workspace([skill])

    assert list(TriggerIteration.objects.values_list("label", "number")) == [("second.json", 2)]


def test_the_display_order_follows_generation_time_everywhere(
    tmp_path: Path, client: Client, api: Client
) -> None:
    import_workspace([workspace(tmp_path, "ws-a", [10, 11])])
    import_workspace([workspace(tmp_path, "ws-b", [1, 12])])  # #3 before all, #4 after all
    order = [number for _, number in shown()]
    assert order == [3, 1, 2, 4]

    iteration = Iteration.objects.get(skill__name=SKILL, number=1)
    assert iteration.previous().number == 3
    assert Iteration.objects.get(skill__name=SKILL, number=3).previous() is None
    skill = Skill.objects.get(name=SKILL)
    assert [it.number for it in Iteration.objects.trend_of(skill)] == order
    # The default comparison: the newest by generation time against the one before it.
    assert client.get(f"{BASE}compare/")["Location"].endswith("?a=2&b=4")
    listed = api.get(f"/api/skills/{SKILL}/iterations").json()["items"]
    assert [item["number"] for item in listed] == [4, 2, 1, 3]
    trend = api.get(f"/api/skills/{SKILL}/trends").json()
    assert [item["number"] for item in trend] == order
    skill_page = client.get(BASE).content.decode()
    places = [skill_page.index(f"#{number} iteration-") for number in order]
    assert places == sorted(places)
    # Two workspaces' iteration-1: their titles tell them apart by the folder each sat in.
    assert "#1 iteration-1 (ws-a)" in skill_page and "#3 iteration-1 (ws-b)" in skill_page
    overview = client.get("/").content.decode()
    assert "#4 iteration-2 (ws-b)" in overview and "generated" in overview


def moved_skill(tmp_path: Path) -> None:
    """#2's results answering to #7 now, as a hand-edited database leaves them."""
    import_workspace([workspace(tmp_path, "ws", [1, 2])])
    Iteration.objects.filter(skill__name=SKILL, number=2).update(number=7)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("iterations/2/", "iterations/7/"),
        ("iterations/2/?rows=all&tag=x", "iterations/7/?rows=all&tag=x"),
        ("iterations/2/benchmark.json", "iterations/7/benchmark.json"),
        ("iterations/2/flaky/", "iterations/7/flaky/"),
        ("iterations/2/evals/alpha/", "iterations/7/evals/alpha/"),
        (
            "iterations/2/evals/alpha/diff/?a=with_skill%2F1&b=without_skill%2F1",
            "iterations/7/evals/alpha/diff/?a=with_skill%2F1&b=without_skill%2F1",
        ),
        (
            "iterations/1/evals/alpha/diff/?a=with_skill%2F1&b=with_skill%2F1&ib=2",
            "iterations/1/evals/alpha/diff/?a=with_skill%2F1&b=with_skill%2F1&ib=7",
        ),
        ("iterations/2/cells/alpha/with_skill/", "iterations/7/cells/alpha/with_skill/"),
        ("iterations/2/evals/alpha/with_skill/1/", "iterations/7/evals/alpha/with_skill/1/"),
        (
            "iterations/2/evals/alpha/with_skill/1/conversation/",
            "iterations/7/evals/alpha/with_skill/1/conversation/",
        ),
        ("compare/?a=1&b=2", "compare/?a=1&b=7"),
    ],
)
def test_a_moved_number_redirects_every_address_beneath_it(
    tmp_path: Path, client: Client, old: str, new: str
) -> None:
    moved_skill(tmp_path)

    response = client.get(BASE + old)

    assert response.status_code == 301
    assert response["Location"] == BASE + new
    assert client.get(response["Location"]).status_code == 200


def test_a_moved_number_redirects_in_the_api_too(tmp_path: Path, api: Client) -> None:
    moved_skill(tmp_path)

    response = api.get(f"/api/skills/{SKILL}/iterations/2/runs?page=1")

    assert response.status_code == 301
    assert response["Location"] == f"/api/skills/{SKILL}/iterations/7/runs?page=1"
    assert api.get(response["Location"]).status_code == 200


def test_a_share_link_keeps_showing_the_iteration_it_was_made_for(tmp_path: Path, user) -> None:
    import_workspace([workspace(tmp_path, "ws-a", [10, 11])])
    created = share_view(creator=user, address=f"{BASE}iterations/2/evals/alpha/")
    visitor = Client()
    opened = visitor.get(reverse("share", args=[created.secret]))
    assert opened["Location"] == f"{BASE}iterations/2/evals/alpha/"

    import_workspace([workspace(tmp_path, "ws-b", [1, 2, 3])])  # older results

    page = visitor.get(opened["Location"]).content.decode()
    assert "#2 iteration-2 (ws-a)" in page and "2026-05-11 10:00" in page

    # Should the results move to another number, the link follows them.
    Iteration.objects.filter(skill__name=SKILL, number=2).update(number=9)
    moved = visitor.get(f"{BASE}iterations/2/evals/alpha/")
    assert moved.status_code == 301
    assert visitor.get(moved["Location"]).status_code == 200
    again = Client().get(reverse("share", args=[created.secret]))
    assert again["Location"] == f"{BASE}iterations/9/evals/alpha/"


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_every_number_and_fills_order_and_ledger() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("runs", "0015_trigger_evals")])
    apps = executor.loader.project_state([("runs", "0015_trigger_evals")]).apps
    skill = apps.get_model("runs", "Skill").objects.create(name=SKILL)
    old = apps.get_model("runs", "Iteration")
    for number, (label, parent) in enumerate(
        [("iteration-1", "ws-b"), ("iteration-1", "ws-a"), ("iteration-2", "ws-a")], start=1
    ):
        old.objects.create(
            skill=skill,
            number=number,
            label=label,
            source_key=f"{label}@{parent}",
            source_kind="eval-magic",
            source_path=f"/tmp/{parent}/{label}",
            content_hash="x",
        )
    apps.get_model("runs", "TriggerIteration").objects.create(
        skill=skill, number=4, label="t.json", source_key="t.json", content_hash="x"
    )

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    rows = Iteration.objects.filter(skill__name=SKILL).in_display_order()
    assert [(it.number, it.position, it.title) for it in rows] == [
        (1, 1, "#1 iteration-1 (ws-b)"),
        (2, 2, "#2 iteration-1 (ws-a)"),
        (3, 3, "#3 iteration-2"),
    ]
    assert list(IssuedNumber.objects.values_list("kind", "number", "source_key")) == [
        ("iteration", 1, "iteration-1@ws-b"),
        ("iteration", 2, "iteration-1@ws-a"),
        ("iteration", 3, "iteration-2@ws-a"),
        ("trigger", 4, "t.json"),
    ]


def test_a_shared_comparison_follows_a_moved_number(tmp_path: Path, user) -> None:
    moved_skill(tmp_path)
    Iteration.objects.filter(skill__name=SKILL, number=7).update(number=2)  # made before…
    created = share_view(creator=user, address=f"{BASE}compare/?a=1&b=2")
    visitor = Client()
    assert visitor.get(reverse("share", args=[created.secret])).status_code == 302
    Iteration.objects.filter(skill__name=SKILL, number=2).update(number=7)  # …the move

    moved = visitor.get(f"{BASE}compare/?a=1&b=2")

    assert moved.status_code == 301 and moved["Location"] == f"{BASE}compare/?a=1&b=7"
    assert visitor.get(moved["Location"]).status_code == 200
    again = Client().get(reverse("share", args=[created.secret]))
    assert again["Location"] == f"{BASE}compare/?a=1&b=7"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("compare/?a=1&b=02", "compare/?a=1&b=7"),
        ("compare/?a=1&b=2.0", "compare/?a=1&b=7"),
        (
            "iterations/1/evals/alpha/diff/?a=with_skill%2F1&b=with_skill%2F1&ib=%2B2",
            "iterations/1/evals/alpha/diff/?a=with_skill%2F1&b=with_skill%2F1&ib=7",
        ),
    ],
)
def test_a_moved_number_written_otherwise_redirects_once_not_in_a_loop(
    tmp_path: Path, client: Client, old: str, new: str
) -> None:
    moved_skill(tmp_path)

    response = client.get(BASE + old)

    assert response.status_code == 301
    assert response["Location"] == BASE + new
    assert client.get(response["Location"]).status_code == 200


def test_a_moved_number_written_otherwise_in_the_api_redirects_once(
    tmp_path: Path, api: Client
) -> None:
    moved_skill(tmp_path)

    response = api.get(f"/api/skills/{SKILL}/iterations/02/runs?page=1")

    assert response.status_code == 301
    assert response["Location"] == f"/api/skills/{SKILL}/iterations/7/runs?page=1"
