"""An eval's history page and API: every iteration of the skill, flips, definition changes."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.sharing import share_view
from bench.generate import generate_workspace, skill_names
from runs.importing import import_workspace
from runs.models import Iteration, Run, Skill
from runs.reading.eval import RUNS_FIRST
from tests.factories import eval_magic_iteration

pytestmark = pytest.mark.django_db

SKILL = "demo-skill"
HISTORY = f"/skills/{SKILL}/evals/alpha/"
XSS = "<img src=x onerror=alert(1)>"


def write_history(root: Path) -> None:
    """Four iterations of demo-skill; `alpha` is absent from the second.

    #1 alpha: a1 passes, a2 fails (with_skill, 2 runs); without_skill fails both.
    #2 beta only.
    #3 alpha: a1 broke (fails in every run), a2 fixed (passes in every run).
    #4 alpha with a new assertion a3 and a rewritten prompt: a changed definition.
    """
    both = ("with_skill", "without_skill")
    iterations = [
        {
            ("alpha", "with_skill"): [{"a1": True, "a2": False}, {"a1": True, "a2": False}],
            ("alpha", "without_skill"): [{"a1": False, "a2": False}],
            ("beta", "with_skill"): [{"b1": True}],
            ("beta", "without_skill"): [{"b1": False}],
        },
        {("beta", c): [{"b1": True}] for c in both},
        {
            ("alpha", "with_skill"): [{"a1": False, "a2": True}, {"a1": False, "a2": True}],
            ("alpha", "without_skill"): [{"a1": False, "a2": True}],
        },
        {
            ("alpha", "with_skill"): [{"a1": True, "a2": True, XSS: True}] * 2,
            ("alpha", "without_skill"): [{"a1": False, "a2": True, XSS: False}],
        },
    ]
    for number, cells in enumerate(iterations, start=1):
        folder = eval_magic_iteration(
            root,
            skill=SKILL,
            label=f"iteration-{number}",
            timestamp=f"2026-05-0{number}T10:00:00Z",
            cells=cells,
        )
        if number == 4:
            for run_json in folder.glob("eval-alpha/**/run.json"):
                record = json.loads(run_json.read_text())
                record["prompt"] = "Do the task, then explain it."
                run_json.write_text(json.dumps(record))


@pytest.fixture
def history(tmp_path: Path) -> None:
    write_history(tmp_path)
    import_workspace([tmp_path])


def page(client: Client, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, response.content[:500]
    return response.content.decode()


def number_of(label: str) -> int:
    return Iteration.objects.get(skill__name=SKILL, label=label).number


def row_of(html: str, label: str) -> str:
    """The scores table's row of one iteration."""
    found = re.search(rf'<tr id="iteration-{number_of(label)}".*?</tr>', html, re.S)
    assert found, label
    return found.group(0)


def test_the_history_lists_every_iteration_newest_first(client: Client, history) -> None:
    html = page(client, HISTORY)

    positions = [html.index(f'id="iteration-{number_of(f"iteration-{n}")}"') for n in (4, 3, 2, 1)]
    assert positions == sorted(positions)
    assert "Ran in 3 of 4 iterations" in html


def test_an_iteration_without_the_eval_is_shown_absent(client: Client, history) -> None:
    row = row_of(page(client, HISTORY), "iteration-2")

    assert "absent: this iteration did not run the eval" in row
    assert "/evals/alpha/" not in row  # no link to an eval page that does not exist


def test_each_row_has_scores_with_intervals_delta_and_links(client: Client, history) -> None:
    html = page(client, HISTORY)
    first, third = number_of("iteration-1"), number_of("iteration-3")
    row = row_of(html, "iteration-3")

    # with_skill: two runs at 0.5 (an interval of zero width: both runs agree); without: one.
    assert "0.50" in row and "0.50 to 0.50" in row
    assert "1 run: no interval" in row
    assert "0/2 runs passed all" in row
    # The delta treatment − control, with too few control runs for an interval.
    assert "<td>0.00<div" in row
    assert "needs 2 runs a side for an interval" in row
    assert f'href="/skills/{SKILL}/iterations/{third}/evals/alpha/"' in row
    # The diff against the previous iteration that ran it (#1, skipping the absent #2) …
    since = unescape(re.search(r'href="([^"]*diff/[^"]*ib=[^"]*)"', row).group(1))
    assert since.startswith(f"/skills/{SKILL}/iterations/{first}/evals/alpha/diff/?")
    assert parse_qs(urlsplit(since).query) == {
        "a": ["with_skill/1"],
        "b": ["with_skill/1"],
        "ib": [str(third)],
    }
    assert page(client, since)  # and it opens
    # … and the two conditions of this iteration side by side.
    pair = unescape(re.search(r'href="([^"]*diff/\?a=without_skill[^"]*)"', row).group(1))
    assert page(client, pair)


def test_flips_are_marked_in_words_against_the_previous_run_iteration(
    client: Client, history
) -> None:
    html = page(client, HISTORY)
    row = row_of(html, "iteration-3")

    assert "▼ broke <code>a1</code>" in row
    assert "▲ fixed <code>a2</code>" in row
    # The control's a2 went from fail to pass as well, and says it is the control's.
    assert '▲ fixed <code>a2</code> <span class="muted">(control)</span>' in row
    assert "no flips" not in row
    # And in the assertions table: passes out of runs with the same words.
    table = html[html.index('id="assertions"') :]
    assert "0/2</span> <span" in table and "▼ broke" in table
    assert "first run" in row_of(html, "iteration-1")


def test_a_changed_definition_is_marked_with_what_changed(client: Client, history) -> None:
    html = page(client, HISTORY)
    row = row_of(html, "iteration-4")

    assert "✎ definition: prompt, assertions" in row
    changes = html[html.index('id="definition"') :]
    assert "prompt, assertions changed since #" in changes
    assert "added: <code>" in changes
    # The prompt's words: what was added, readable without colour.
    assert "[removed: </span>task.<span" in changes
    assert "[added: </span>task, then explain it.<span" in changes
    # #3 ran the same definition as #1: no mark there.
    assert "✎" not in row_of(html, "iteration-3")


def test_agent_written_text_is_escaped(client: Client, history) -> None:
    html = page(client, HISTORY)

    assert XSS not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


@pytest.mark.parametrize(
    "url",
    [
        f"/skills/{SKILL}/evals/no-such-eval/",
        "/skills/no-such-skill/evals/alpha/",
        f"/skills/{SKILL}/evals/al%00pha/",
    ],
)
def test_an_unknown_eval_or_skill_is_a_404_with_a_reason(client: Client, history, url) -> None:
    response = client.get(url)

    assert response.status_code == 404
    assert b"alpha" not in response.content or b"No skill" in response.content


def test_the_eval_page_links_to_its_history(client: Client, history) -> None:
    html = page(client, f"/skills/{SKILL}/iterations/{number_of('iteration-3')}/evals/alpha/")

    assert f'href="{HISTORY}"' in html


def test_a_skill_share_link_opens_the_history_and_an_eval_link_does_not(user, history) -> None:
    third = number_of("iteration-3")
    skill_link = share_view(creator=user, address=f"/skills/{SKILL}/")
    visitor = Client()
    assert visitor.get(reverse("share", args=[skill_link.secret])).status_code == 302
    html = page(visitor, HISTORY)
    since = re.search(r'href="([^"]*diff/[^"]*ib=[^"]*)"', row_of(html, "iteration-3"))
    assert page(visitor, unescape(since.group(1)))  # both iterations lie inside the skill's share

    eval_link = share_view(creator=user, address=f"/skills/{SKILL}/iterations/{third}/evals/alpha/")
    other = Client()
    assert other.get(reverse("share", args=[eval_link.secret])).status_code == 302
    assert other.get(HISTORY).status_code == 302  # to the login: not what was shared
    assert HISTORY not in page(other, f"/skills/{SKILL}/iterations/{third}/evals/alpha/")


def test_an_iteration_share_link_diffs_no_run_of_another_iteration(user, history) -> None:
    first, third = number_of("iteration-1"), number_of("iteration-3")
    link = share_view(creator=user, address=f"/skills/{SKILL}/iterations/{first}/")
    visitor = Client()
    assert visitor.get(reverse("share", args=[link.secret])).status_code == 302
    diff = f"/skills/{SKILL}/iterations/{first}/evals/alpha/diff/?a=with_skill/1&b=with_skill/1"

    assert visitor.get(diff).status_code == 200
    refused = visitor.get(f"{diff}&ib={third}")
    assert refused.status_code == 404
    assert f"does not open iteration #{third}" in refused.content.decode()


def test_the_api_returns_the_same_history(api: Client, history) -> None:
    response = api.get(f"/api/skills/{SKILL}/evals/alpha/history")

    assert response.status_code == 200, response.content
    data = response.json()
    assert data["eval_id"] == "alpha"
    assert [i["label"] for i in data["iterations"]] == [f"iteration-{n}" for n in (4, 3, 2, 1)]
    third = data["iterations"][1]
    assert third["present"] and not data["iterations"][2]["present"]
    with_skill = next(c for c in third["conditions"] if c["name"] == "with_skill")
    assert with_skill["score"]["mean"] == 0.5 and with_skill["runs"] == 2
    flips = {(a["assertion_id"], a["role"], a["flip"]) for a in third["assertions"] if a["flip"]}
    assert ("a1", "treatment", "broke") in flips and ("a2", "treatment", "fixed") in flips
    assert data["iterations"][0]["definition_change"]["parts"] == ["prompt", "assertions"]
    assert data["iterations"][0]["url"].endswith("/evals/alpha/")

    missing = api.get(f"/api/skills/{SKILL}/evals/nope/history")
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]


def test_the_history_operation_is_in_the_api_document() -> None:
    from evalsite.api import api

    paths = api.get_openapi_schema(path_prefix="/api")["paths"]
    operation = paths["/api/skills/{skill}/evals/{eval_id}/history"]["get"]

    assert operation["operationId"] == "runs_api_eval_history"
    schema = operation["responses"][200]["content"]["application/json"]["schema"]
    assert schema["$ref"].endswith("/EvalHistoryOut")


def queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured)


def test_the_history_asks_a_fixed_number_of_queries(client: Client, api: Client, tmp_path) -> None:
    api.get("/api/skills")  # the token's first use of the minute records it: one more query
    counts = []
    for name, scale in (
        ("small", {"iterations": 2, "evals": 3, "runs": 1, "assertions": 2}),
        ("large", {"iterations": 20, "evals": 6, "runs": 2, "assertions": 4}),
    ):
        Skill.objects.all().delete()
        generate_workspace(tmp_path / name, skills=1, events=6, workers=1, **scale)
        import_workspace([tmp_path / name])
        skill = skill_names(1)[0]
        eval_id = Run.objects.filter(iteration__skill__name=skill).values_list(
            "eval_id", flat=True
        )[0]
        counts.append(
            (
                queries(client, f"/skills/{skill}/evals/{eval_id}/"),
                queries(api, f"/api/skills/{skill}/evals/{eval_id}/history"),
            )
        )

    assert counts[0] == counts[1]


def test_the_eval_page_summarises_each_condition_and_assertion(client: Client, history) -> None:
    html = page(client, f"/skills/{SKILL}/iterations/{number_of('iteration-1')}/evals/alpha/")
    summary = html[html.index('class="eval-summary"') : html.index('class="definition"')]

    assert "0.50 to 0.50" in summary  # with_skill: 2 runs of 0.5
    assert "1 run: no interval" in summary  # without_skill
    assert '<span class="pass-count">2/2</span> <span class="muted small">passed' in summary
    assert '<span class="fail-count">0/1</span> <span class="muted small">failed' in summary


def test_the_eval_page_shows_the_first_runs_of_each_condition_and_the_rest_on_request(
    client: Client, tmp_path: Path
) -> None:
    eval_magic_iteration(
        tmp_path,
        skill=SKILL,
        cells={
            ("alpha", c): [{"a1": i % 2 == 0} for i in range(10)]
            for c in ("with_skill", "without_skill")
        },
    )
    import_workspace([tmp_path])
    url = f"/skills/{SKILL}/iterations/1/evals/alpha/"

    first = page(client, url)
    assert first.count('<article class="run"') == 2 * RUNS_FIRST
    assert "7 more runs of with_skill" in first
    assert 'href="/skills/demo-skill/iterations/1/evals/alpha/with_skill/10/"' in first
    assert 'href="?runs=all#runs"' in first
    assert "10/20" not in first and "5/10" in first  # the summary counts every run

    every = page(client, url + "?runs=all")
    assert every.count('<article class="run"') == 20
    assert "more runs of" not in every
    # Both selects of the diff form offer every run whatever is shown.
    assert first.count('value="with_skill/10"') == every.count('value="with_skill/10"') == 2
