"""Trigger evals through the JSON API and the pages: the same numbers, escaped, shareable."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.models import ShareLink
from accounts.sharing import share_view
from runs.importing import import_workspace
from runs.models import Iteration, Skill, TriggerQuery, TriggerRun
from tests.factories import trigger_result, write_json

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("q")</script>'


@pytest.fixture
def imported(tmp_path: Path) -> None:
    folder = tmp_path / "changelog"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: changelog\ndescription: Old.\n---\n")
    before = [("release notes", True, 1), (HOSTILE, True, 0), ("weather", False, 2)]
    after = [("release notes", True, 3), (HOSTILE, True, 2), ("weather", False, 0)]
    write_json(
        folder / "evals" / "a-trigger-results.json", trigger_result("Use for changelogs.", before)
    )
    write_json(folder / "evals" / "b-trigger-results.json", trigger_result(f"Now {HOSTILE}", after))
    import_workspace([tmp_path])


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


# ---- The pages ----------------------------------------------------------------------------

SKILL_PAGE = "/skills/changelog/"
TRIGGER_1, TRIGGER_2 = "/skills/changelog/triggers/1/", "/skills/changelog/triggers/2/"
COMPARE = "/skills/changelog/triggers/compare/"
ESCAPED = "&lt;script&gt;alert(&quot;q&quot;)&lt;/script&gt;"


def page(client: Client, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code, response.content[:300])
    return response.content.decode()


def skill_folder(root: Path, *, name: str = "changelog") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Old.\n---\n")
    return folder


def add_runs(number: int, query: str, outcomes: list[tuple[str, str]], **run: object) -> None:
    """TriggerRun rows for one query, as runevals --triggers records them."""
    found = TriggerQuery.objects.get(iteration__number=number, query=query)
    for index, (outcome, loaded) in enumerate(outcomes, start=1):
        TriggerRun.objects.create(
            query=found, run_index=index, outcome=outcome, loaded_skill=loaded, **run
        )


def test_the_skill_page_has_a_triggering_panel(client: Client, imported) -> None:
    html = page(client, SKILL_PAGE)
    panel = html[html.index('id="triggering"') :]
    assert "<h2>Triggering</h2>" in panel
    assert 'id="chart-triggers"' in panel and 'data-chart="chart-triggers"' in panel
    # The versions, each linking to its page, with its text, length and change.
    assert f'href="{TRIGGER_1}"' in panel and f'href="{TRIGGER_2}"' in panel
    assert "Use for changelogs." in panel and "19 characters" in panel
    assert '<del><span class="visually-hidden">[removed: </span>Use for changelogs.' in panel
    assert f"{ESCAPED}<span" in panel.split("<ins>", 1)[1]
    # Recall 1 of 6 should-trigger runs, then 5 of 6; passed of scored.
    assert "17%" in panel and "83%" in panel and "0/3" in panel and "3/3" in panel
    assert f'href="{COMPARE}"' in panel
    assert HOSTILE not in html


def test_the_panel_says_when_its_figures_are_the_test_split_s(
    client: Client, tmp_path: Path
) -> None:
    skill_folder(tmp_path)
    step = {
        "iteration": 1,
        "description": "v1",
        "train_results": [
            {"query": "notes", "should_trigger": True, "triggers": 3, "runs": 3},
            {"query": "rain", "should_trigger": False, "triggers": 0, "runs": 3},
        ],
        "test_results": [{"query": "log", "should_trigger": True, "triggers": 1, "runs": 3}],
    }
    results = {"best_description": "v1", "holdout": 0.4, "history": [step]}
    write_json(tmp_path / "changelog-workspace" / "2026-03-01_101500" / "results.json", results)
    import_workspace([tmp_path])
    html = page(client, SKILL_PAGE)
    assert "on the test split where the loop held one out" in html
    assert "test split" in html.split("trigger-versions", 1)[1]
    assert ">best</span>" in html
    # The test split's recall is 1 of 3; all queries would say 4 of 6.
    assert "33%" in html.split("trigger-versions", 1)[1]
    trigger = page(client, TRIGGER_1)
    assert '<th scope="row">Train</th>' in trigger and '<th scope="row">Test</th>' in trigger


def test_a_trigger_set_without_results_says_how_to_run_it(client: Client, tmp_path: Path) -> None:
    folder = skill_folder(tmp_path)
    queries = [
        {"query": "release notes", "should_trigger": True},
        {"query": "changelog", "should_trigger": True},
        {"query": "weather", "should_trigger": False},
    ]
    write_json(folder / "evals" / "trigger-eval.json", queries)
    import_workspace([tmp_path])
    html = page(client, SKILL_PAGE)
    assert "<h2>Triggering</h2>" in html
    assert "3 queries (2 that should load it, 1 that should not)" in html
    assert f"python manage.py runevals --triggers {folder}</code>" in html
    assert "chart-triggers" not in html


def test_a_skill_without_trigger_evals_has_no_panel(client: Client, tmp_path: Path) -> None:
    skill_folder(tmp_path)
    write_json(tmp_path / "changelog" / "evals" / "evals.json", {"evals": []})
    import_workspace([tmp_path])
    assert "Triggering" not in page(client, SKILL_PAGE)


def test_the_trigger_page_shows_the_description_and_its_queries(client: Client, imported) -> None:
    html = page(client, TRIGGER_1)
    assert "Use for changelogs." in html and "19 characters" in html
    assert "as the result recorded it" in html
    assert "skill-creator run_eval.py" in html and "threshold 0.5" in html
    assert "3 runs per query" in html
    # Misses and false triggers first: the hostile query (0/3), then 1/3 and 2/3 of 3.
    queries = html[html.index("trigger-queries") :]
    assert queries.index(ESCAPED) < queries.index("release notes") < queries.index("weather")
    assert "fail: missed" in queries and "fail: false trigger" in queries
    assert "0/3" in queries and "2/3" in queries
    assert "0%–56%" in queries  # Wilson interval of 0 of 3
    assert '<th scope="row">All queries</th>' in html
    assert "Train" not in html  # no split
    assert f'href="{TRIGGER_2}"' in html and 'href="/skills/changelog/triggers/compare/' not in html
    assert "Which skill loaded" not in html  # no query recorded `loaded`
    assert HOSTILE not in html


def test_the_trigger_page_links_back_and_to_the_comparison(client: Client, imported) -> None:
    html = page(client, TRIGGER_2)
    assert f'href="{TRIGGER_1}" rel="prev"' in html
    assert f'href="{COMPARE}?a=1&amp;b=2"' in html
    assert f"Now {ESCAPED}" in html and HOSTILE not in html


def test_a_query_s_runs_open_in_a_details_element(client: Client, imported) -> None:
    add_runs(
        2,
        HOSTILE,
        [("loaded", "changelog"), ("other", HOSTILE), ("error", "")],
        tool_calls=[{"name": "Skill", "input": {"skill": HOSTILE}}],
        final_message=f"I used {HOSTILE}",
        error="timed out after 30 s",
    )
    html = page(client, TRIGGER_2)
    details = html[html.index("<details><summary>3 runs</summary>") :]
    details = details[: details.index("</details>")]
    assert "Run 1</strong>: loaded the skill (<code>changelog</code>)" in details
    assert f"Run 2</strong>: loaded another skill (<code>{ESCAPED}</code>)" in details
    assert "Run 3</strong>: failed" in details
    assert "<code>Skill</code>" in details and "&lt;script&gt;" in details
    assert f"I used {ESCAPED}" in details
    assert "Error: timed out after 30 s" in details
    assert HOSTILE not in html


def test_routing_results_show_a_confusion_matrix(client: Client, imported) -> None:
    TriggerQuery.objects.filter(iteration__number=1, query="weather").update(
        expected_skill="none", loaded={"none": 1, "changelog": 2}
    )
    # A blank expected skill is the skill under test (it should trigger).
    TriggerQuery.objects.filter(iteration__number=1, query="release notes").update(
        expected_skill="", loaded={"changelog": 1, HOSTILE: 2}
    )
    html = page(client, TRIGGER_1)
    matrix = html[html.index("Which skill loaded") :]
    # Columns in name order, "none" last; a row per skill expected.
    assert f"<th>{ESCAPED}</th><th>changelog</th><th>none</th>" in matrix
    row = '<th scope="row">{}</th>' + '<td class="num">{}</td>' * 3
    assert row.format("changelog", 2, 1, 0) in matrix
    assert row.format("none", 0, 2, 1) in matrix
    assert HOSTILE not in html


def test_a_description_taken_from_skill_md_says_so(client: Client, tmp_path: Path) -> None:
    folder = skill_folder(tmp_path)
    data = trigger_result("ignored", [("notes", True, 3)])
    del data["description"]
    write_json(folder / "evals" / "trigger-results.json", data)
    import_workspace([tmp_path])
    html = page(client, TRIGGER_1)
    assert "taken from SKILL.md" in html and '<blockquote class="text">Old.</blockquote>' in html
    assert 'id="warnings"' in html


@pytest.mark.parametrize(
    "url",
    [
        "/skills/nope/triggers/1/",
        "/skills/changelog/triggers/9/",
        "/skills/nope/triggers/compare/?a=1&b=2",
        f"{COMPARE}?a=1&b=9",
        f"{COMPARE}?a=x&b=2",
        f"{COMPARE}?a=1",
        f"{COMPARE}?a=0&b=1",
    ],
)
def test_unknown_skills_numbers_and_bad_comparisons_are_404(
    client: Client, imported, url: str
) -> None:
    page(client, url, status=404)


def test_the_comparison_gives_the_verdict_the_delta_and_the_flips(client: Client, imported) -> None:
    html = page(client, f"{COMPARE}?a=1&b=2")
    assert "#2 beats #1 by +0.67" in html
    assert "permutation p = 0.250, 3 queries" in html
    assert "Use for changelogs." in html and f"Now {ESCAPED}" in html
    assert '<ins><span class="visually-hidden">[added: </span>Now' in html
    assert '<th scope="row">#1 a-trigger-results.json</th>' in html
    fixed = html[html.index("<h3>Fixed") : html.index("<h3>Broken")]
    assert "release notes" in fixed and ESCAPED in fixed and "weather" in fixed
    # Each flip says which way in words (and a mark read past by screen readers), not by
    # its colour alone.
    assert fixed.count('<span aria-hidden="true">▲</span> now passes</span>') == 3
    assert "None." in html[html.index("<h3>Broken") :]
    assert '<span aria-hidden="true">▲</span> suggestive: better</span>' in html  # p = 0.25
    # The form picks both sides, in the URL.
    assert f'action="{COMPARE}"' in html and '<option value="2" selected>' in html
    assert HOSTILE not in html


def test_the_comparison_the_other_way_calls_the_flips_broken(client: Client, imported) -> None:
    html = page(client, f"{COMPARE}?a=2&b=1")
    broken = html[html.index("<h3>Broken") :]
    assert "release notes" in broken and "▼</span> now fails</span>" in broken
    assert "None." in html[html.index("<h3>Fixed") : html.index("<h3>Broken")]


def test_the_comparison_without_a_choice_opens_the_latest_two(client: Client, imported) -> None:
    response = client.get(COMPARE)
    assert response.status_code == 302 and response["Location"] == f"{COMPARE}?a=1&b=2"


def test_one_description_has_nothing_to_compare_with(client: Client, tmp_path: Path) -> None:
    write_json(
        skill_folder(tmp_path) / "evals" / "trigger-results.json",
        trigger_result("One.", [("notes", True, 3)]),
    )
    import_workspace([tmp_path])
    assert "one tested description" in page(client, COMPARE)


# ---- Share links --------------------------------------------------------------------------


def opened(user, address: str) -> Client:
    """A browser without an account that opened a share link to `address`."""
    created = share_view(creator=user, address=address)
    visitor = Client()
    assert visitor.get(reverse("share", args=[created.secret])).status_code == 302
    return visitor


def is_login_redirect(response) -> bool:
    return response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_skill_link_opens_the_skill_s_trigger_pages(user, imported) -> None:
    visitor = opened(user, SKILL_PAGE)
    for url in (SKILL_PAGE, TRIGGER_1, TRIGGER_2, f"{COMPARE}?a=2&b=1"):
        assert visitor.get(url).status_code == 200, url
    html = visitor.get(SKILL_PAGE).content.decode()
    assert f'href="{TRIGGER_1}"' in html and f'href="{COMPARE}"' in html


def test_a_trigger_link_opens_that_trigger_iteration_only(user, imported) -> None:
    visitor = opened(user, TRIGGER_2)
    html = page(visitor, TRIGGER_2)
    assert "shared view" in html
    # Links outside the share are left out: the skill, #1, the comparison.
    assert f'href="{TRIGGER_1}"' not in html and f'href="{SKILL_PAGE}"' not in html
    assert "Compare with the previous description" not in html
    for url in (TRIGGER_1, SKILL_PAGE, f"{COMPARE}?a=1&b=2", "/skills/changelog/iterations/2/"):
        assert is_login_redirect(visitor.get(url)), url
    assert ShareLink.objects.get().kind == "trigger"


def test_a_description_comparison_link_opens_that_comparison_only(user, imported) -> None:
    visitor = opened(user, f"{COMPARE}?b=2&a=1")
    html = page(visitor, f"{COMPARE}?a=1&b=2")
    assert 'name="a"' not in html  # no form to choose another
    assert "#2 beats #1" in html
    for url in (f"{COMPARE}?a=2&b=1", COMPARE, TRIGGER_1, SKILL_PAGE):
        assert is_login_redirect(visitor.get(url)), url
    assert ShareLink.objects.get().kind == "trigger-compare"


def test_an_iteration_link_never_opens_the_trigger_iteration_of_its_number(
    user, imported, tmp_path: Path
) -> None:
    skill = Skill.objects.get(name="changelog")
    Iteration.objects.create(
        skill=skill, number=2, label="iteration-2", mode="new-skill", source_kind="eval-magic"
    )
    visitor = opened(user, "/skills/changelog/iterations/2/")
    assert is_login_redirect(visitor.get(TRIGGER_2))
    assert is_login_redirect(visitor.get(f"{COMPARE}?a=1&b=2"))


def test_every_link_of_a_shared_trigger_page_opens_inside_the_share(user, imported) -> None:
    for shared in (SKILL_PAGE, TRIGGER_2, f"{COMPARE}?a=1&b=2"):
        ShareLink.objects.all().delete()
        visitor = opened(user, shared)
        html = page(visitor, shared)
        link = ShareLink.objects.get()
        addresses = {unescape(a) for a in re.findall(r'\b(?:href|action)="(/[^"]*)"', html)}
        for address in addresses - {a for a in addresses if a.startswith("/static/")}:
            assert link.opens(address), (shared, address)
            assert visitor.get(address).status_code in {200, 302}, (shared, address)


# ---- Query budget -------------------------------------------------------------------------


def trigger_skill(root: Path, queries: int) -> None:
    """Two descriptions of `queries` queries each; every query of the second has 3 runs."""
    Skill.objects.all().delete()
    folder = skill_folder(root)
    counts = [(f"query {i}", i % 3 != 0, i % 4) for i in range(queries)]
    write_json(folder / "evals" / "a-trigger-results.json", trigger_result("First.", counts))
    write_json(folder / "evals" / "b-trigger-results.json", trigger_result("Second.", counts[::-1]))
    write_json(
        folder / "evals" / "trigger-eval.json",
        [{"query": q, "should_trigger": s} for q, s, _ in counts],
    )
    import_workspace([root])
    for query in TriggerQuery.objects.filter(iteration__number=2):
        for index in (1, 2, 3):
            TriggerRun.objects.create(
                query=query, run_index=index, outcome="none", tool_calls=[{"name": "Read"}]
            )


def queries_per_page(client: Client) -> dict[str, int]:
    counts = {}
    for url in (SKILL_PAGE, TRIGGER_2, f"{COMPARE}?a=1&b=2"):
        cache.clear()  # the rows were added without a new generation: measure a cold page
        with CaptureQueriesContext(connection) as captured:
            page(client, url)
        counts[url] = len(captured)
    return counts


def test_trigger_pages_ask_a_fixed_number_of_queries(client: Client, tmp_path: Path) -> None:
    trigger_skill(tmp_path / "small", 3)
    small = queries_per_page(client)
    trigger_skill(tmp_path / "large", 30)
    assert queries_per_page(client) == small


def test_search_lists_the_trigger_queries_that_hold_the_words(
    client: Client, user, imported
) -> None:
    client.force_login(user)
    page = client.get("/search/", {"q": "release"}).content.decode()
    assert "Trigger queries" in page and "release notes" in page
    assert "tested in 2 trigger iterations" in page
    hostile = client.get("/search/", {"q": "alert"}).content.decode()
    assert HOSTILE not in hostile and "&lt;script&gt;" in hostile
    assert "Trigger queries" not in client.get("/search/", {"q": "release -notes"}).content.decode()
    # Beside the runs' first page only: a second page of runs does not repeat them.
    later = client.get("/search/", {"q": "release", "page": 2}).content.decode()
    assert "Trigger queries" not in later
