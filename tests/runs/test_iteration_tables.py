"""The iteration page's matrix and lists, and the skill page's iteration table: natural order,
sorting, movement filters with counts, pages, cells that are links, the flaky badge's rule."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from runs import stats
from runs.importing import import_workspace
from runs.names import natural_key
from runs.reading.iteration import MATRIX_PAGE_ROWS
from tests.factories import eval_magic_iteration

pytestmark = pytest.mark.django_db

T, C = "with_skill", "without_skill"
URL = "/skills/tables/iterations/{}/"


def runs_scoring(score: float, runs: int = 1) -> list[dict[str, bool]]:
    """`runs` runs whose four assertions pass as often as `score` says (0, .25, … 1)."""
    passed = round(score * 4)
    return [{f"a{i}": i < passed for i in range(4)}] * runs


def write(tmp_path: Path, n: int, treatment: dict[str, float], control: dict[str, float]) -> None:
    cells = {}
    for eval_id, score in treatment.items():
        cells[(eval_id, T)] = runs_scoring(score)
    for eval_id, score in control.items():
        cells[(eval_id, C)] = runs_scoring(score)
    eval_magic_iteration(
        tmp_path / f"ws{n}",
        skill="tables",
        label=f"iteration-{n}",
        timestamp=f"2026-05-0{n}T10:00:00Z",
        cells=cells,
    )
    import_workspace([tmp_path / f"ws{n}"])


def get(client: Client, url: str, **headers: str) -> str:
    response = client.get(url, **headers)
    assert response.status_code == 200, url
    return response.content.decode()


def matrix_ids(html: str) -> list[str]:
    """The eval ids of the matrix's rows, top to bottom."""
    table = html.split('id="matrix"')[1].split("</table>")[0]
    return re.findall(r'<td><a href="/skills/tables/iterations/\d+/evals/([^/]+)/">', table)


@pytest.fixture
def two_iterations(tmp_path: Path) -> str:
    """#1 then #2: in #2 "2" improved, "10" regressed, "1" and "100" unchanged, "11" is new."""
    before = {"1": 0.5, "2": 0.25, "10": 1.0, "100": 0.75}
    write(tmp_path, 1, before, {k: 0.5 for k in before})
    after = {"1": 0.5, "2": 0.75, "10": 0.5, "100": 0.75, "11": 1.0}
    write(tmp_path, 2, after, {"1": 0.25, "2": 0.0, "10": 0.5, "100": 1.0, "11": 0.5})
    return URL.format(2)


# --- order and sorting ---------------------------------------------------------------------


def test_the_natural_key_reads_digits_as_numbers() -> None:
    ids = ["100", "eval-10", "10", "2", "eval-9", "0", "1", "b"]
    assert sorted(ids, key=natural_key) == ["0", "1", "2", "10", "100", "b", "eval-9", "eval-10"]


def test_eval_ids_are_in_natural_order(client: Client, two_iterations: str) -> None:
    assert matrix_ids(get(client, two_iterations)) == ["1", "2", "10", "11", "100"]
    assert matrix_ids(get(client, two_iterations + "?sort=-eval")) == ["100", "11", "10", "2", "1"]


def test_the_matrix_sorts_by_each_conditions_score(client: Client, two_iterations: str) -> None:
    by_treatment = matrix_ids(get(client, two_iterations + f"?sort=-score:{T}"))
    assert by_treatment == ["11", "2", "100", "1", "10"]  # 1.0, .75, .75 (natural), .5, .5
    by_control = matrix_ids(get(client, two_iterations + f"?sort=score:{C}"))
    assert by_control == ["2", "1", "10", "11", "100"]


def test_the_matrix_sorts_by_delta_and_by_change(client: Client, two_iterations: str) -> None:
    # Δ: 1 +.25, 2 +.75, 10 0, 100 −.25, 11 +.5
    assert matrix_ids(get(client, two_iterations + "?sort=-delta")) == ["2", "11", "1", "10", "100"]
    # Change since #1: 2 +.5, 1 0, 100 0, 10 −.5; "11" is new, so it has none: last either way.
    assert matrix_ids(get(client, two_iterations + "?sort=-change")) == [
        "2",
        "1",
        "100",
        "10",
        "11",
    ]
    assert matrix_ids(get(client, two_iterations + "?sort=change")) == ["10", "1", "100", "2", "11"]


def test_a_sort_the_matrix_does_not_have_falls_back_to_eval_order(
    client: Client, two_iterations: str
) -> None:
    for bogus in ("?sort=score:nobody", "?sort=name", "?sort=" + "x" * 300):
        assert matrix_ids(get(client, two_iterations + bogus)) == ["1", "2", "10", "11", "100"]


def sort_link(query: str, label: str) -> str:
    return f'<a href="?{query}" hx-get="?{query}">{label}</a>'


def test_sort_links_toggle_and_keep_the_other_choices(client: Client, two_iterations: str) -> None:
    html = get(client, two_iterations + "?sort=-delta&change=improved&page=1")
    head = html.split('id="matrix"')[1].split("</thead>")[0]
    # The current order's link turns it round and says which way it runs; a new order
    # starts again on page 1 and keeps the filter.
    assert sort_link("sort=delta&amp;change=improved", "Δ (T − C) ▼") in head
    assert sort_link("sort=eval&amp;change=improved", "Eval") in head
    assert sort_link(f"sort=-score%3A{T}&amp;change=improved", T) in head
    assert "Change since #1 iteration-1" in head


# --- movement filters ----------------------------------------------------------------------


def test_the_movement_links_count_each_kind(client: Client, two_iterations: str) -> None:
    html = get(client, two_iterations)
    links = html.split('class="movements"')[1].split("</p>")[0]
    for label in ("▲ improved 1", "▼ regressed 1", "= unchanged 2", "new 1"):
        assert f">{label}</a>" in links
    assert 'href="?change=improved"' in links
    assert matrix_ids(get(client, two_iterations + "?change=improved")) == ["2"]
    assert matrix_ids(get(client, two_iterations + "?change=regressed")) == ["10"]
    assert matrix_ids(get(client, two_iterations + "?change=unchanged")) == ["1", "100"]
    assert matrix_ids(get(client, two_iterations + "?change=new")) == ["11"]


def test_the_counts_follow_the_other_filters(client: Client, two_iterations: str) -> None:
    # One run per cell: nothing is flaky, so "only flaky" leaves no eval of any movement.
    html = get(client, two_iterations + "?only=flaky")
    links = html.split('class="movements"')[1].split("</p>")[0]
    assert ">▲ improved 0</a>" in links and ">= unchanged 0</a>" in links
    assert "No eval matches these filters" in html


def test_the_change_column_says_how_it_moved_in_words_and_signs(
    client: Client, two_iterations: str
) -> None:
    html = get(client, two_iterations + "?change=regressed")
    row = html.split('id="matrix"')[1].split("<tbody")[1].split("</tr>")[0]
    assert '<span class="move regressed" title="regressed">▼ −0.50</span>' in row
    assert "1.00 → 0.50" in row
    assert "<strong>regressed</strong> since #1 iteration-1: 1 of 5 evals" in html


def test_the_first_iteration_has_no_movement_links(client: Client, two_iterations: str) -> None:
    html = get(client, URL.format(1))
    assert 'class="movements"' not in html
    assert "<th>Since before</th>" in html


def test_an_unknown_movement_or_page_is_ignored_not_an_error(
    client: Client, two_iterations: str
) -> None:
    html = get(client, two_iterations + "?change=sideways&page=-3&only=changed")
    assert matrix_ids(html) == ["1", "2", "10", "11", "100"]


# --- pages ---------------------------------------------------------------------------------


@pytest.fixture
def many_evals(tmp_path: Path) -> str:
    count = MATRIX_PAGE_ROWS + 5
    write(
        tmp_path,
        1,
        {str(i): (i % 5) / 4 for i in range(count)},
        {str(i): 0.5 for i in range(count)},
    )
    return URL.format(1)


def test_the_matrix_is_paged_in_natural_order(client: Client, many_evals: str) -> None:
    first = get(client, many_evals)
    assert matrix_ids(first) == [str(i) for i in range(MATRIX_PAGE_ROWS)]
    assert f"evals 1–{MATRIX_PAGE_ROWS} of {MATRIX_PAGE_ROWS + 5}" in first
    assert 'rel="next" href="?page=2"' in first and 'rel="prev"' not in first

    second = get(client, many_evals + "?page=2")
    assert matrix_ids(second) == [str(i) for i in range(MATRIX_PAGE_ROWS, MATRIX_PAGE_ROWS + 5)]
    assert 'rel="prev" href="?page=1"' in second and 'rel="next"' not in second
    # Past the end: the last page, not an error.
    assert matrix_ids(get(client, many_evals + "?page=99")) == matrix_ids(second)


def test_every_row_on_one_page_and_back(client: Client, many_evals: str) -> None:
    everything = get(client, many_evals + "?rows=all")
    assert len(matrix_ids(everything)) == MATRIX_PAGE_ROWS + 5
    assert 'rel="next"' not in everything
    assert f"Show {MATRIX_PAGE_ROWS} evals a page" in everything
    # A sort sees every row, not just the page: the best five (score 1.0) come first.
    top = matrix_ids(get(client, many_evals + f"?sort=-score:{T}"))[:9]
    assert top == ["4", "9", "14", "19", "24", "29", "34", "39", "44"]


def test_the_matrix_fragment_for_htmx_is_the_table_alone(client: Client, many_evals: str) -> None:
    fragment = get(client, many_evals + "?page=2&sort=-eval", HTTP_HX_REQUEST="true")
    assert fragment.lstrip().startswith('<div id="matrix"')
    assert "<html" not in fragment and "Reviewer feedback" not in fragment
    assert matrix_ids(fragment) == [str(i) for i in range(4, -1, -1)]


# --- cells are links -----------------------------------------------------------------------


def test_each_cell_is_a_link_to_its_runs(client: Client, two_iterations: str) -> None:
    html = get(client, two_iterations)
    links = re.findall(r'<a class="cell-link" href="([^"]+)" hx-get="([^"]+)"', html)
    assert len(links) == 2 * 5
    assert all(href == hx for href, hx in links)
    href = f"{two_iterations}cells/2/{T}/"
    assert (href, href) in links
    # Without htmx the link is a page of its own; with it, a row under the matrix row.
    assert "1 run" in get(client, href) and "<html" in get(client, href)
    row = get(client, href, HTTP_HX_REQUEST="true")
    assert row.lstrip().startswith('<tr class="drilldown"') and 'colspan="5"' in row


def test_a_cell_without_runs_is_not_a_link(client: Client, tmp_path: Path) -> None:
    write(tmp_path, 1, {"only-treated": 1.0, "both": 0.5}, {"both": 0.5})
    html = get(client, URL.format(1))
    assert f"cells/only-treated/{C}/" not in html
    assert f"cells/only-treated/{T}/" in html


# --- the flaky badge -----------------------------------------------------------------------


def tally(passed: int, runs: int, eval_id: str = "e", assertion: str = "a") -> stats.AssertionTally:
    return stats.AssertionTally(T, eval_id, assertion, passed, runs)


def test_flakiness_grows_near_one_half_and_with_runs() -> None:
    assert tally(0, 5).flakiness == tally(5, 5).flakiness == 0.0
    assert tally(1, 3).flakiness == pytest.approx(0.0615, abs=1e-3)
    assert tally(2, 4).flakiness == pytest.approx(0.150, abs=1e-3)
    assert tally(5, 10).flakiness == pytest.approx(0.237, abs=1e-3)
    assert tally(5, 10).flakiness > tally(4, 10).flakiness > tally(1, 10).flakiness
    assert tally(10, 20).flakiness > tally(5, 10).flakiness > tally(1, 2).flakiness
    assert tally(2, 10).flakiness == tally(8, 10).flakiness  # pass or fail: the rarer counts


def test_a_flip_is_notable_when_the_rarer_outcome_is_one_run_in_four() -> None:
    assert tally(1, 3).notably_flaky and tally(3, 4).notably_flaky and tally(2, 8).notably_flaky
    assert not tally(1, 5).notably_flaky and not tally(9, 10).notably_flaky
    assert not tally(3, 3).notably_flaky and not tally(0, 0).notably_flaky


def test_the_ranking_puts_notable_flips_first_and_badges_the_first_few() -> None:
    rare = tally(1, 20, "rare")  # flaky, but its rarer outcome is 1 run in 20
    steady = tally(4, 4, "steady")
    coin = [tally(5, 10, f"coin-{i}") for i in range(12)]
    third = tally(1, 3, "third")
    ranked = stats.rank_flaky([rare, steady, third, *coin])
    assert steady not in ranked
    assert ranked[:12] == coin  # equally flaky: the order they came in
    assert ranked[12:] == [third, rare]
    assert stats.most_flaky(ranked) == coin[: stats.FLAKY_BADGES]
    assert stats.most_flaky([rare]) == []


@pytest.fixture
def flaky_iteration(tmp_path: Path) -> str:
    """12 evals each with a coin-flip assertion (2 of 4), and one whose flip is 1 of 5."""
    cells = {}
    for i in range(12):
        cells[(f"coin-{i}", T)] = [{"flip": j % 2 == 0, "fine": True} for j in range(4)]
        cells[(f"coin-{i}", C)] = [{"flip": True, "fine": True}] * 4
    cells[("rare", T)] = [{"flip": j > 0, "fine": True} for j in range(5)]
    cells[("rare", C)] = [{"flip": True, "fine": True}] * 5
    eval_magic_iteration(tmp_path, skill="tables", cells=cells)
    import_workspace([tmp_path])
    return URL.format(1)


def test_only_the_flakiest_cells_carry_the_badge(client: Client, flaky_iteration: str) -> None:
    html = get(client, flaky_iteration + "?rows=all")
    matrix = html.split('id="matrix"')[1].split("</table>")[0]
    assert matrix.count('class="badge flaky"') == stats.FLAKY_BADGES
    badged = re.findall(r"evals/(coin-\d+)/\">(?:(?!</tr>).)*badge flaky", matrix, re.S)
    assert badged == [f"coin-{i}" for i in range(stats.FLAKY_BADGES)]
    assert 'title="among this iteration\'s flakiest assertions: flip"' in matrix
    legend = html.split('class="legend')[1].split("</p>")[0]
    assert "marks the 10 flakiest of the iteration's 13 flaky assertions" in legend
    assert "at least 1 run in 4" in legend
    # "only flaky" keeps the rows with a badge.
    assert len(matrix_ids(get(client, flaky_iteration + "?only=flaky"))) == stats.FLAKY_BADGES


def test_the_flaky_list_is_ranked_by_the_same_rule(client: Client, flaky_iteration: str) -> None:
    html = get(client, flaky_iteration + "flaky/")
    items = html.split('class="flaky-ranking"')[1].split("</ol>")[0].split("<li>")[1:]
    assert len(items) == 13
    assert [("coin-" in item) for item in items] == [True] * 12 + [False]
    assert all('class="badge flaky"' in item for item in items[: stats.FLAKY_BADGES])
    assert not any('class="badge flaky"' in item for item in items[stats.FLAKY_BADGES :])
    assert "in rare / with_skill: passed 4 of 5 runs" in items[-1]
    assert "rarer outcome under 1 run in 4" in items[-1]
    # The iteration page lists the first few of the same ranking.
    page_list = get(client, flaky_iteration).split('id="flaky-assertions"')[1].split("</ol>")[0]
    assert "coin-0 /" in page_list and "rare /" not in page_list


# --- escaping and queries ------------------------------------------------------------------


def test_the_matrix_escapes_eval_ids_and_condition_names(client: Client, tmp_path: Path) -> None:
    hostile, odd = "<img src=x onerror=alert(1)>", 'cond "&" <b>'
    eval_magic_iteration(
        tmp_path,
        skill="tables",
        conditions=[odd, C],
        cells={(hostile, odd): [{"a": True}], (hostile, C): [{"a": False}]},
    )
    import_workspace([tmp_path])
    html = get(client, URL.format(1) + "?sort=-score:" + odd.replace("&", "%26"))
    assert hostile not in html and odd not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "cond &quot;&amp;&quot; &lt;b&gt;" in html
    head = html.split('id="matrix"')[1].split("</thead>")[0]
    assert "&lt;b&gt; ▼</a>" in head  # the odd condition's sort was understood


def queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        get(client, url)
    return len(captured)


def test_the_queries_do_not_grow_with_the_number_of_evals(client: Client, tmp_path: Path) -> None:
    urls = [
        "",
        "?sort=-delta&change=improved",
        f"?sort=score:{T}&page=2&only=flaky",
        "?rows=all&sort=-change",
        "flaky/",
    ]

    def measure(n: int, evals: int) -> list[int]:
        before = {f"e{i}": (i % 5) / 4 for i in range(evals)}
        write(tmp_path, n, before, dict.fromkeys(before, 0.5))
        after = {f"e{i}": ((i + 1) % 5) / 4 for i in range(evals + 2)}
        write(tmp_path, n + 1, after, dict.fromkeys(after, 0.25))
        counts = [queries(client, URL.format(n + 1) + url) for url in urls]
        return counts + [queries(client, "/skills/tables/?sort=-delta")]

    small = measure(1, 3)
    large = measure(3, 3 * MATRIX_PAGE_ROWS)
    assert large == small


# --- the skill page's iteration table ------------------------------------------------------


def skill_table_order(html: str) -> list[str]:
    table = html.split('id="iteration-table"')[1].split("</table>")[0]
    return re.findall(r'<td><a href="/skills/tables/iterations/(\d+)/">', table)


def test_the_skill_pages_iteration_table_sorts(client: Client, tmp_path: Path) -> None:
    # Δ of #1 .5, #2 −.25, #3 .25; treatment 1.0, .25, .75.
    for n, (t, c) in enumerate([(1.0, 0.5), (0.25, 0.5), (0.75, 0.5)], start=1):
        write(tmp_path, n, {"e": t}, {"e": c})
    assert skill_table_order(get(client, "/skills/tables/")) == ["3", "2", "1"]
    assert skill_table_order(get(client, "/skills/tables/?sort=iteration")) == ["1", "2", "3"]
    assert skill_table_order(get(client, "/skills/tables/?sort=-delta")) == ["1", "3", "2"]
    assert skill_table_order(get(client, "/skills/tables/?sort=treatment")) == ["2", "3", "1"]
    assert skill_table_order(get(client, "/skills/tables/?sort=sideways")) == ["3", "2", "1"]
    fragment = get(client, "/skills/tables/?sort=delta", HTTP_HX_REQUEST="true")
    assert fragment.lstrip().startswith('<div id="iteration-table"')
    assert skill_table_order(fragment) == ["2", "3", "1"]
    assert sort_link("sort=-delta", "Delta (95% CI) ▲") in fragment


def test_each_row_links_to_its_evals_history_where_the_visitor_may_open_it(
    client: Client, two_iterations: str, django_user_model
) -> None:
    from accounts.sharing import share_view

    html = get(client, two_iterations)
    assert 'class="history-link small" href="/skills/tables/evals/2/"' in html
    assert client.get("/skills/tables/evals/2/").status_code == 200

    # An iteration's share link opens what lies beneath the iteration, not the skill's
    # history: its matrix (cached apart from everyone else's) links none.
    creator = django_user_model.objects.create_user("sharer", password="pw")
    link = share_view(creator=creator, address=two_iterations)
    visitor = Client()
    visitor.get(f"/s/{link.secret}/")
    shared = get(visitor, two_iterations)
    assert "history-link" not in shared and 'href="/skills/tables/evals/' not in shared
    assert "history-link" in get(client, two_iterations)
