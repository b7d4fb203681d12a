"""A matrix cell's runs in place on the iteration page, and two runs side by side."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from runs.importing import import_workspace
from runs.reading.eval import side_by_side
from tests.hostile import hostile_workspace, unsafe_markup

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
ITERATION_4 = "/skills/taming-flaky-tests/iterations/4/"
CELL = f"{ITERATION_4}cells/timezone-boundary-flake/new_skill/"
DIFF = f"{ITERATION_4}evals/timezone-boundary-flake/diff/"


@pytest.fixture
def sample() -> None:
    import_workspace([ROOT / "runs" / "sample"])


def test_each_matrix_cell_links_to_its_runs(client: Client, sample: None) -> None:
    html = client.get(ITERATION_4).content.decode()

    # A link without JavaScript; htmx puts the runs in a row under the cell's row instead.
    assert f'<a class="cell-link" href="{CELL}" hx-get="{CELL}" hx-trigger="click once">' in html
    assert '<tbody hx-target="closest tr" hx-swap="afterend" hx-push-url="false">' in html


def test_a_cell_gives_htmx_one_table_row_of_its_runs(client: Client, sample: None) -> None:
    html = client.get(CELL, HTTP_HX_REQUEST="true").content.decode()

    assert html.lstrip().startswith('<tr class="drilldown"')
    assert 'id="run-new_skill-1"' in html and "old_skill" not in html.split("<article")[1]
    assert 'class="verdict-mark">PASS' in html  # each assertion's verdict and evidence
    assert 'details class="final"' in html  # the final message
    assert "<html" not in html


def test_a_cell_is_a_page_of_its_own_without_htmx(client: Client, sample: None) -> None:
    html = client.get(CELL).content.decode()

    assert "<html" in html and 'id="run-new_skill-1"' in html


def test_an_unknown_cell_is_a_404(client: Client, sample: None) -> None:
    assert client.get(f"{ITERATION_4}cells/timezone-boundary-flake/nope/").status_code == 404
    assert client.get(f"{ITERATION_4}cells/nope/new_skill/").status_code == 404


def test_two_runs_side_by_side_diff_their_final_messages_and_patches(
    client: Client, sample: None
) -> None:
    html = client.get(DIFF, {"a": "old_skill/1", "b": "new_skill/1"}).content.decode()

    assert "Final message" in html and "diff.patch" in html
    # old_skill said one more paragraph than new_skill: shown on the left only.
    assert '<tr class="delete"><td class="n">5</td><td class="l">I also parametrized' in html
    assert html.count('<table class="side-by-side">') == 2


def test_the_eval_page_offers_the_side_by_side(client: Client, sample: None) -> None:
    html = client.get(f"{ITERATION_4}evals/timezone-boundary-flake/").content.decode()

    assert f'action="{DIFF}"' in html
    assert '<option value="new_skill/1" selected>' in html


def test_runs_of_another_iteration_can_be_compared(client: Client, sample: None) -> None:
    url = "/skills/taming-flaky-tests/iterations/3/evals/timezone-boundary-flake/diff/"
    html = client.get(url, {"a": "with_skill/1", "b": "new_skill/1", "ib": 4}).content.decode()

    assert "#3 · " in html and "#4 · " in html


@pytest.mark.parametrize(
    "query",
    [{}, {"a": "old_skill/1"}, {"a": "nonsense", "b": "new_skill/1"}, {"a": "x/1", "b": "y/1"}],
)
def test_a_bad_choice_of_runs_is_a_404_naming_it(client: Client, sample, query) -> None:
    assert client.get(DIFF, query).status_code == 404


def test_side_by_side_pairs_changes_and_keeps_equal_lines() -> None:
    rows = side_by_side("a\nb\nc", "a\nB\nc\nd")

    assert [(r.tag, r.left, r.right) for r in rows] == [
        ("equal", "a", "a"),
        ("replace", "b", "B"),
        ("equal", "c", "c"),
        ("insert", None, "d"),
    ]


def test_hostile_text_stays_text_in_the_cell_and_the_diff(client: Client, tmp_path: Path) -> None:
    import_workspace([hostile_workspace(tmp_path)])
    base = "/skills/hostile-skill/iterations/1/"

    cell = client.get(f"{base}cells/alpha/with_skill/", HTTP_HX_REQUEST="true").content.decode()
    diff = client.get(
        f"{base}evals/alpha/diff/", {"a": "with_skill/1", "b": "without_skill/1"}
    ).content.decode()

    for html in (cell, diff):
        assert "unique-hostile-marker" in html
        assert unsafe_markup(html) == []
