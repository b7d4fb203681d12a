"""Search results: neighbouring runs of one eval that read alike are one result with its
pass/fail counts in words; paging stays by run, and a group cut by a page's edge says so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from runs.importing import import_workspace
from runs.search.query import parse_query
from runs.search.searching import Filters, search
from tests.factories import eval_magic_iteration, write_json
from tests.hostile import unsafe_markup

HOSTILE = "<script>alert(1)</script>"
#: alpha: seven runs of one prompt (4 with the skill: pass, pass, fail, ungraded; 3 without:
#: fail, fail, pass); beta: one run of another prompt. Both prompts hold "helper".
CELLS = {
    ("alpha", "with_skill"): [{"a": True}, {"a": True}, {"a": False}, None],
    ("alpha", "without_skill"): [{"a": False}, {"a": False}, {"a": True}],
    ("beta", "with_skill"): [{"a": True}],
}
ALPHA_PROMPT = f"Rename the helper {HOSTILE} in tests/helpers.py"


@pytest.fixture
def workspace(db: None, tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path, cells=CELLS)
    for run_json in folder.glob("eval-*/**/run.json"):
        record = json.loads(run_json.read_text())
        alpha = record["eval_id"] == "alpha"
        record["prompt"] = ALPHA_PROMPT if alpha else "Document the helper's arguments."
        write_json(run_json, record)
    import_workspace([tmp_path])


def results(offset: int = 0, limit: int = 20):  # noqa: ANN201
    return search(parse_query("helper"), Filters(), offset=offset, limit=limit)


def shape(found) -> list[tuple[str, int, bool, bool]]:  # noqa: ANN001
    """(eval, runs, continued, continues) of each result."""
    return [(g.first.run.eval_id, len(g.hits), g.continued, g.continues) for g in found.groups]


def test_runs_of_one_eval_whose_snippets_match_are_one_result_with_counts(
    workspace: None,
) -> None:
    found = results()

    assert found.count == 8 and len(found.hits) == 8
    assert shape(found) == [("beta", 1, False, False), ("alpha", 7, False, False)]
    alpha = found.groups[1]
    assert (alpha.passed, alpha.failed, alpha.ungraded) == (3, 3, 1)
    assert alpha.conditions == [("without_skill", 3), ("with_skill", 4)]
    assert alpha.eval_url() == "/skills/demo-skill/iterations/1/evals/alpha/"


def test_a_different_snippet_or_field_is_a_result_of_its_own(workspace: None) -> None:
    # The final messages ("Done with alpha.") read alike too, but not like beta's.
    by_message = search(parse_query("done"), Filters())
    assert [(g.first.run.eval_id, g.first.found_in, len(g.hits)) for g in by_message.groups] == [
        ("beta", "final message", 1),
        ("alpha", "final message", 7),
    ]


def test_paging_stays_by_run_and_a_cut_group_says_it_goes_on(workspace: None) -> None:
    first, second = results(limit=5), results(offset=5, limit=5)

    assert shape(first) == [("beta", 1, False, False), ("alpha", 4, False, True)]
    assert shape(second) == [("alpha", 3, True, False)]
    runs = [h.run.pk for h in first.hits + second.hits]
    assert len(runs) == len(set(runs)) == 8  # every run once, none twice
    assert results(offset=8, limit=5).groups == []


def test_the_page_shows_the_group_its_counts_in_words_and_its_runs(
    client: Client, workspace: None
) -> None:
    html = client.get("/search/", {"q": "helper"}).content.decode()

    group = html[html.index('<li class="hit hit-group">') :]
    assert "<strong>7 runs</strong>:" in group
    passed, failed = '<span class="outcome-pass">3 passed</span>', '<span class="outcome-fail">'
    assert f"{passed} · {failed}3 failed</span>" in group
    assert '<span class="outcome-none">1 not graded</span>' in group
    assert 'href="/skills/demo-skill/iterations/1/evals/alpha/"' in group
    assert "Show the 7 runs" in group
    runs = re.findall(
        r'class="run-link" href="(/skills/demo-skill/iterations/1/evals/alpha/[^"]+)', group
    )
    assert len(set(runs)) == 7
    assert group.count("✓ passed") == 3 and group.count("✗ failed") == 3
    # The single result keeps its run link and says its outcome in words.
    single = html[: html.index('<li class="hit hit-group">')]
    assert "/evals/beta/with_skill/1/" in single and "✓ passed" in single
    # Each result links to its eval's history across iterations.
    assert 'class="history-link small" href="/skills/demo-skill/evals/alpha/"' in group
    assert 'class="history-link small" href="/skills/demo-skill/evals/beta/"' in single


def test_a_group_cut_by_the_page_says_so(client: Client, workspace: None, monkeypatch) -> None:
    monkeypatch.setattr("runs.search.views.PAGE_SIZE", 5)
    monkeypatch.setattr("runs.search.forms.PAGE_SIZE", 5)

    first = client.get("/search/", {"q": "helper"}).content.decode()
    second = client.get("/search/", {"q": "helper", "page": 2}).content.decode()

    assert "4 runs</strong> on this page" in first and "more runs on the next page" in first
    assert "3 runs</strong> on this page" in second and "more runs on the previous page" in second


def test_agent_text_in_a_grouped_snippet_is_escaped(client: Client, workspace: None) -> None:
    html = client.get("/search/", {"q": "helper"}).content.decode()

    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert HOSTILE not in html and unsafe_markup(html) == []


def test_grouping_costs_no_query_per_hit(workspace: None) -> None:
    with CaptureQueriesContext(connection) as few:
        results(limit=1)
    with CaptureQueriesContext(connection) as many:
        results(limit=20)
    assert len(many) == len(few)
