"""The compare page for three or more iterations: per-eval scores in columns with the
change from the first, each column's delta, the two-iteration verdicts between neighbours,
its table sorted and filtered through the query string, bad choices refused in one line,
share scope, the skill page's selection form, and the API."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.importing import import_workspace
from runs.models import Iteration
from tests.factories import eval_magic_iteration
from tests.runs.test_compare_page import paragraph, run_results

pytestmark = pytest.mark.django_db

COMPARE = "/skills/demo-skill/compare/"

Cells = dict[str, tuple[list[float], list[float]]]

# Per eval, (treatment runs, control runs); each run's share of 4 assertions passed.
FIRST: Cells = {
    "e1": ([0.5, 0.5], [0.25, 0.25]),
    "e2": ([0.25, 0.5], [0.25, 0.25]),
    "e3": ([0.75, 0.5], [0.5, 0.5]),
}
SECOND: Cells = {
    "e1": ([1.0, 1.0], [0.25, 0.25]),
    "e2": ([0.5, 0.75], [0.25, 0.0]),
    "e3": ([0.75, 1.0], [0.5, 0.5]),
}
THIRD: Cells = {
    "e1": ([0.75, 0.75], [0.25, 0.25]),
    "e2": ([0.25, 0.5], [0.25, 0.25]),
    "e3": ([0.5, 0.5], [0.5, 0.5]),
    "e10": ([1.0, 1.0], [0.5, 0.5]),
}
# Treatment scores by hand: e1 0.5 → 1.0 → 0.75 (improved), e2 0.375 → 0.625 → 0.375
# (unchanged), e3 0.625 → 0.875 → 0.5 (regressed), e10 only in #3 (one side).


def iterations(
    tmp_path: Path,
    *sides: Cells,
    modes: tuple[str, ...] = (),
    settings: dict[int, dict[str, str]] | None = None,
    days: tuple[str, ...] = (),
    skill: str = "demo-skill",
) -> None:
    """Import one iteration of `skill` per entry of `sides`, #1 first unless `days` (the
    day each was generated) says otherwise; `settings` overrides conditions.json keys."""
    for index, cells in enumerate(sides):
        mode = modes[index] if index < len(modes) else "new-skill"
        names = (
            ["with_skill", "without_skill"] if mode == "new-skill" else ["new_skill", "old_skill"]
        )
        folder = eval_magic_iteration(
            tmp_path,
            skill=skill,
            label=f"iteration-{index + 1}",
            mode=mode,
            timestamp=f"2026-05-{days[index] if days else f'{index + 1:02}'}T10:00:00Z",
            conditions=names,
            cells={
                (eval_id, condition): [run_results(rate) for rate in rates]
                for eval_id, arms in cells.items()
                for condition, rates in zip(names, arms, strict=True)
            },
        )
        if settings and index + 1 in settings:
            path = folder / "conditions.json"
            path.write_text(json.dumps(json.loads(path.read_text()) | settings[index + 1]))
    import_workspace([tmp_path])


def get(client: Client, query: str, status: int = 200, **headers: str) -> str:
    response = client.get(COMPARE + "?" + query, **headers)
    assert response.status_code == status, response.content[:500]
    return response.content.decode()


def table_rows(html: str) -> list[list[str]]:
    """The per-eval table's rows as their cells' text."""
    body = html.split('id="many-table"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    return [
        [
            " ".join(unescape(re.sub(r"<[^>]+>", " ", cell)).split())
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        for row in rows
    ]


def eval_order(html: str) -> list[str]:
    return [row[0] for row in table_rows(html)]


def test_scores_sit_in_columns_with_the_change_from_the_first(client, tmp_path) -> None:
    iterations(tmp_path, FIRST, SECOND, THIRD)

    html = get(client, "iterations=1,2,3")

    assert table_rows(html) == [
        ["e1", "0.50", "1.00 +0.50", "0.75 +0.25", "▲ improved"],
        ["e2", "0.38", "0.62 +0.25", "0.38 0.00", "= unchanged"],
        ["e3", "0.62", "0.88 +0.25", "0.50 −0.12", "▼ regressed"],
        ["e10", "–", "– –", "1.00 –", "◦ one side only"],
    ]


def test_each_column_has_its_own_delta_with_its_interval(client, tmp_path) -> None:
    iterations(tmp_path, FIRST, SECOND, THIRD)

    html = get(client, "iterations=1,2,3")

    # #1's per-eval deltas: 0.5 − 0.25, 0.375 − 0.25, 0.625 − 0.5 → mean +0.17.
    first = paragraph(html.replace("<tr", "<p").replace("</tr>", "</p>"), "column-1")
    assert "with_skill − without_skill +0.17" in first and " to " in first
    # #3's: 0.5, 0.125, 0.0, 0.5 → +0.28.
    third = paragraph(html.replace("<tr", "<p").replace("</tr>", "</p>"), "column-3")
    assert "+0.28" in third


def test_a_column_without_a_control_says_why_it_has_no_delta(client, tmp_path) -> None:
    iterations(tmp_path, FIRST, SECOND)
    eval_magic_iteration(
        tmp_path,
        label="iteration-3",
        timestamp="2026-05-03T10:00:00Z",
        conditions=["with_skill"],
        cells={("e1", "with_skill"): [run_results(1.0)]},
    )
    import_workspace([tmp_path])

    html = get(client, "iterations=1,2,3")

    row = paragraph(html.replace("<tr", "<p").replace("</tr>", "</p>"), "column-3")
    assert "no control condition, so no delta" in row
    pair = html.split('id="pair-2-3"', 1)[1].split("</section>", 1)[0]
    assert "not comparable: #3 has no control condition, so no delta" in pair


def test_a_column_whose_delta_has_no_interval_says_why(client, tmp_path) -> None:
    iterations(tmp_path, FIRST, SECOND, {"e1": ([1.0], [0.5])})

    html = get(client, "iterations=1,2,3")

    row = paragraph(html.replace("<tr", "<p").replace("</tr>", "</p>"), "column-3")
    assert "with_skill − without_skill +0.50 (1 eval in both: no interval)" in row


def test_neighbours_get_the_verdicts_the_two_iteration_page_gives(client, tmp_path) -> None:
    iterations(tmp_path, FIRST, SECOND, THIRD)

    html = get(client, "iterations=1,2,3")

    for a, b in ((1, 2), (2, 3)):
        pair = html.split(f'id="pair-{a}-{b}"', 1)[1].split("</section>", 1)[0]
        two = get(client, f"a={a}&b={b}")
        delta = paragraph(two, "delta-change").split(":", 1)[1].strip()
        treatment = paragraph(two, "treatment-change").split(":", 1)[1].strip()
        text = " ".join(unescape(re.sub(r"<[^>]+>", " ", pair)).split())
        assert f"Delta: {delta}" in text
        assert treatment in text
        assert f'href="/skills/demo-skill/compare/?a={a}&amp;b={b}"' in pair
    # By hand (as on the two-iteration page): each eval's delta grew, +0.375 on average.
    assert "#2 beats #1 by +0.38 (95% CI +0.06 to +0.69, p = 0.25, 3 evals)" in html
    # No pair of neighbours is #1 and #3.
    assert 'id="pair-1-3"' not in html


def test_a_change_of_mode_or_agent_is_said_for_its_pair_only(client, tmp_path) -> None:
    iterations(
        tmp_path,
        FIRST,
        SECOND,
        THIRD,
        FIRST,
        modes=("new-skill", "new-skill", "revision", "revision"),
        settings={4: {"agent_model": "claude-opus-4-1"}},
    )

    html = get(client, "iterations=1,2,3,4")

    pairs = {
        key: html.split(f'id="pair-{key}"', 1)[1].split("</section>", 1)[0]
        for key in ("1-2", "2-3", "3-4")
    }
    assert "not comparable" not in pairs["1-2"] and "Also changed" not in pairs["1-2"]
    assert "not comparable: #2 is a new-skill iteration" in pairs["2-3"]
    assert "#3 is a revision iteration" in pairs["2-3"]
    assert "not comparable" not in pairs["3-4"]
    assert "Also changed: agent model" in unescape(pairs["3-4"])
    assert "claude-opus-4-1" in pairs["3-4"]


def test_columns_follow_the_display_order_not_the_numbers(client, tmp_path) -> None:
    # #3 was generated first: it is the first column, and changes are from it.
    iterations(tmp_path, FIRST, SECOND, THIRD, days=("02", "03", "01"))
    order = list(Iteration.objects.in_display_order().values_list("number", flat=True))
    assert order == [3, 1, 2]

    response = client.get(COMPARE + "?iterations=1,2,3")
    assert response.status_code == 302
    assert response["Location"] == COMPARE + "?iterations=3,1,2"

    html = get(client, "iterations=3,1,2")
    heads = re.findall(
        r"<th>(.*?)</th>", html.split('id="many-table"', 1)[1].split("</thead>")[0], re.S
    )
    assert [re.sub(r"<[^>]+>", "", h).split()[0] for h in heads[1:4]] == ["#3", "#1", "#2"]
    assert table_rows(html)[0] == ["e1", "0.75", "0.50 −0.25", "1.00 +0.25", "▲ improved"]
    assert 'id="pair-3-1"' in html and 'id="pair-1-2"' in html


def test_the_table_sorts_and_filters_through_the_query(client, tmp_path) -> None:
    iterations(tmp_path, FIRST, SECOND, THIRD)

    assert eval_order(get(client, "iterations=1,2,3")) == ["e1", "e2", "e3", "e10"]
    # First → last: +0.25, 0, −0.125; e10 has no change and goes last either way.
    assert eval_order(get(client, "iterations=1,2,3&sort=-change")) == ["e1", "e2", "e3", "e10"]
    assert eval_order(get(client, "iterations=1,2,3&sort=change")) == ["e3", "e2", "e1", "e10"]
    # #2's scores: 1.0, 0.875, 0.625.
    assert eval_order(get(client, "iterations=1,2,3&sort=-score-2")) == ["e1", "e3", "e2", "e10"]
    # #3's change from #1: +0.25, 0, −0.125.
    assert eval_order(get(client, "iterations=1,2,3&sort=change-3")) == ["e3", "e2", "e1", "e10"]
    assert eval_order(get(client, "iterations=1,2,3&show=regressed")) == ["e3"]
    assert eval_order(get(client, "iterations=1,2,3&show=one-side")) == ["e10"]
    # A sort the page does not have is the default order, not an error.
    assert eval_order(get(client, "iterations=1,2,3&sort=score-9")) == ["e1", "e2", "e3", "e10"]
    fragment = get(client, "iterations=1,2,3&sort=change", HTTP_HX_REQUEST="true")
    assert fragment.lstrip().startswith('<div id="many-table"') and "<h1>" not in fragment


def test_long_lists_show_the_first_25_until_asked(client, tmp_path) -> None:
    many = {f"e{n}": ([0.5, 0.75], [0.25, 0.25]) for n in range(1, 31)}
    iterations(tmp_path, many, many, many)

    first = get(client, "iterations=1,2,3")
    assert eval_order(first) == [f"e{n}" for n in range(1, 26)]
    assert "Show all 30 evals" in first and "25 shown, 5 more" in first
    assert len(eval_order(get(client, "iterations=1,2,3&rows=all"))) == 30


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ("iterations=", 400, "Choose at least two iterations to compare."),
        ("iterations=2", 400, "Choose at least two iterations to compare."),
        ("iterations=2,2", 400, "Choose at least two iterations to compare."),
        ("iterations=1,x<b>", 400, "“x&lt;b&gt;” is not an iteration number."),
        ("iterations=1,-2", 400, "“-2” is not an iteration number."),
        ("iterations=1,2,99999999999999999999", 400, "is not an iteration number."),
        (
            "iterations=" + ",".join(map(str, range(1, 14))),
            400,
            "at most 12 iterations to compare (13 chosen).",
        ),
        ("iterations=1,2,9", 404, "demo-skill has no iteration #9."),
        # #4 is another skill's: demo-skill has none.
        ("iterations=1,4,5", 404, "demo-skill has no iterations #4, #5."),
    ],
)
def test_bad_choices_get_one_line_saying_what_is_wrong(client, tmp_path, query, status, message):
    iterations(tmp_path / "demo", FIRST, SECOND, THIRD)
    iterations(tmp_path / "other", FIRST, FIRST, FIRST, FIRST, skill="other-skill")

    html = get(client, query, status=status)

    error = paragraph(html, "many-error") if 'id="many-error"' in html else ""
    assert message in unescape(error) or message in html
    assert "Compare selected" in html  # the choice can be corrected on the spot


def test_two_chosen_open_the_two_iteration_page(client, tmp_path) -> None:
    iterations(tmp_path, FIRST, SECOND, THIRD)

    response = client.get(COMPARE + "?iterations=3&iterations=1&show=improved&sort=-score-1")

    assert response.status_code == 302
    assert response["Location"] == COMPARE + "?a=1&b=3&show=improved"


def test_repeated_keys_from_the_form_land_on_the_canonical_address(client, tmp_path) -> None:
    iterations(tmp_path, FIRST, SECOND, THIRD)

    response = client.get(COMPARE + "?iterations=3&iterations=1&iterations=2&sort=change")

    assert response["Location"] == COMPARE + "?iterations=1,2,3&sort=change"


def test_the_skill_page_selects_iterations_to_compare(client, tmp_path) -> None:
    iterations(tmp_path, FIRST, SECOND, THIRD)

    html = client.get("/skills/demo-skill/").content.decode()

    form = re.search(r'<form id="compare-selected"[^>]*>.*?</form>', html, re.S).group(0)
    assert 'method="get"' in form and 'action="/skills/demo-skill/compare/"' in form
    assert "Compare selected" in form
    boxes = re.findall(r'name="iterations" value="(\d+)" form="compare-selected"', html)
    assert sorted(boxes) == ["1", "2", "3"]


def test_one_iteration_offers_no_selection_and_the_pair_page_points_here(client, tmp_path):
    iterations(tmp_path, FIRST)
    assert 'id="compare-selected"' not in client.get("/skills/demo-skill/").content.decode()

    iterations(tmp_path, FIRST, SECOND)
    two = get(client, "a=1&b=2")
    assert 'href="/skills/demo-skill/#iterations">Three or more side by side</a>' in two


def test_a_skill_link_opens_it_a_comparison_link_only_its_own(user, tmp_path) -> None:
    from accounts.sharing import share_view

    iterations(tmp_path, FIRST, SECOND, THIRD, FIRST)
    skill_link = share_view(creator=user, address="/skills/demo-skill/")
    visitor = Client()
    visitor.get(reverse("share", args=[skill_link.secret]))
    assert "e10" in get(visitor, "iterations=1,2,3")

    many_link = share_view(creator=user, address=COMPARE + "?iterations=1,2,3")
    holder = Client()
    holder.get(reverse("share", args=[many_link.secret]))
    shared = get(holder, "iterations=1,2,3&sort=change&show=regressed")
    assert eval_order(shared) == ["e3"]
    # That comparison only: no choosing another, no pair page, no eval history.
    assert "Compare selected" not in shared
    assert "compare/?a=" not in shared and "/evals/e1/" not in shared
    assert holder.get(COMPARE + "?iterations=1,2,4").status_code != 200
    assert holder.get(COMPARE + "?a=1&b=2").status_code != 200

    pair_link = share_view(creator=user, address=COMPARE + "?a=1&b=2")
    other = Client()
    other.get(reverse("share", args=[pair_link.secret]))
    assert other.get(COMPARE + "?iterations=1,2,3").status_code != 200


def test_agents_writing_is_escaped(client, tmp_path) -> None:
    xss = "<img src=x onerror=alert(1)>"
    iterations(tmp_path, FIRST, SECOND, THIRD, settings={2: {"agent_model": xss}})

    html = get(client, "iterations=1,2,3")

    assert xss not in html and "&lt;img src=x" in html


def queries(client: Client, query: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        get(client, query)
    return len(captured)


def test_queries_do_not_grow_with_evals_or_runs(client, tmp_path, settings) -> None:
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    small = {"e1": ([0.5], [0.25]), "e2": ([0.25], [0.5])}
    iterations(tmp_path / "small", small, small, small)
    few = queries(client, "iterations=1,2,3&rows=all")

    from runs.models import Skill

    Skill.objects.all().delete()
    large = {f"e{n}": ([0.5, 0.25, 0.75], [0.25, 0.5, 0.0]) for n in range(40)}
    iterations(tmp_path / "large", large, large, large)
    assert queries(client, "iterations=1,2,3&rows=all") == few


def test_the_api_gives_the_same_comparison(api, client, tmp_path) -> None:
    iterations(tmp_path, FIRST, SECOND, THIRD, days=("02", "03", "01"))

    response = api.get("/api/skills/demo-skill/compare-many?iterations=1,2,3")

    assert response.status_code == 200, response.content[:400]
    body = response.json()
    assert body["iterations"] == [3, 1, 2]
    assert [c["label"] for c in body["columns"]] == ["#3", "#1", "#2"]
    assert body["columns"][1]["delta"]["mean"] == pytest.approx(1 / 6)
    assert body["columns"][1]["treatment"] == "with_skill"
    e1 = body["evals"][0]
    assert e1["eval_id"] == "e1" and e1["direction"] == "improved"
    assert [(c["score"], c["change"]) for c in e1["cells"]] == [
        (0.75, None),
        (0.5, -0.25),
        (1.0, 0.25),
    ]
    assert [row["eval_id"] for row in body["evals"]] == ["e1", "e2", "e3", "e10"]
    # Each neighbour pair is what the two-iteration endpoint gives for it.
    pair = api.get("/api/skills/demo-skill/compare?a=1&b=2").json()
    assert body["neighbours"][1] == pair
    assert [(n["before"], n["after"]) for n in body["neighbours"]] == [(3, 1), (1, 2)]


@pytest.mark.parametrize(
    ("query", "status", "detail"),
    [
        ("iterations=1", 400, "Choose at least two iterations to compare."),
        ("iterations=1,x", 400, "“x” is not an iteration number."),
        ("iterations=1,2,7", 404, "demo-skill has no iteration #7."),
        ("", 422, None),
    ],
)
def test_the_api_refuses_a_bad_choice_in_one_line(api, tmp_path, query, status, detail) -> None:
    iterations(tmp_path, FIRST, SECOND, THIRD)

    response = api.get(f"/api/skills/demo-skill/compare-many?{query}")

    assert response.status_code == status
    if detail:
        assert response.json() == {"detail": detail}


def test_a_removed_iteration_is_named_and_a_moved_number_followed(client, tmp_path) -> None:
    iterations(tmp_path, FIRST, SECOND, THIRD, FIRST)
    Iteration.objects.get(skill__name="demo-skill", number=4).delete()

    html = get(client, "iterations=1,2,4", status=404)
    assert "demo-skill iteration #4 (iteration-4) was removed" in html

    # Results whose number changed by hand (as tests/runs/test_addresses.py does it): the
    # same address under the new number, as every page answers a moved number.
    Iteration.objects.filter(skill__name="demo-skill", number=2).update(number=7)
    response = client.get(COMPARE + "?iterations=1,2,3&sort=change")
    assert response.status_code == 301
    assert response["Location"] == COMPARE + "?iterations=1%2C7%2C3&sort=change"
    assert eval_order(get(client, "iterations=1%2C7%2C3")) == ["e1", "e2", "e3", "e10"]
    # A moved number onto one already chosen leaves one iteration: refused, not a 500.
    assert "at least two" in get(client, "iterations=7,7", status=400)


def test_a_share_link_of_several_follows_a_moved_number(user, tmp_path) -> None:
    from accounts.models import ShareLink
    from accounts.sharing import share_view

    iterations(tmp_path, FIRST, SECOND, THIRD)
    created = share_view(creator=user, address=COMPARE + "?iterations=1,2,3")
    holder = Client()
    holder.get(reverse("share", args=[created.secret]))
    Iteration.objects.filter(skill__name="demo-skill", number=2).update(number=7)

    response = holder.get(COMPARE + "?iterations=1,2,3")

    assert response.status_code == 301
    assert ShareLink.objects.get().compare_query == {"iterations": "1,7,3"}
    assert eval_order(get(holder, "iterations=1,7,3")) == ["e1", "e2", "e3", "e10"]
