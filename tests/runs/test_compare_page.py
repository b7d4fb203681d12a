"""The compare page: its headline (the delta's change, then the treatment's), its per-eval
table sorted, filtered and paged through the query string, and its links to the diffs."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from runs.importing import import_workspace
from runs.models import Skill
from tests.factories import eval_magic_iteration

pytestmark = pytest.mark.django_db

COMPARE = "/skills/demo-skill/compare/"
XSS = "<img src=x onerror=alert(1)>"


def two_iterations(
    tmp_path: Path,
    before: dict[str, tuple[list[float], list[float]]],
    after: dict[str, tuple[list[float], list[float]]],
    *,
    after_mode: str = "new-skill",
    after_settings: dict[str, str] | None = None,
) -> None:
    """Import #1 and #2 of demo-skill: per eval, (treatment runs, control runs), each run's
    share of 4 assertions passed (0.5 → a1, a2 pass; a3, a4 fail)."""
    for label, cells, mode, day in (
        ("iteration-1", before, "new-skill", "01"),
        ("iteration-2", after, after_mode, "02"),
    ):
        names = (
            ["with_skill", "without_skill"] if mode == "new-skill" else ["new_skill", "old_skill"]
        )
        folder = eval_magic_iteration(
            tmp_path,
            label=label,
            mode=mode,
            timestamp=f"2026-05-{day}T10:00:00Z",
            conditions=names[::-1] if mode == "revision" else names,
            cells={
                (eval_id, condition): [run_results(rate) for rate in rates]
                for eval_id, arms in cells.items()
                for condition, rates in zip(names, arms, strict=True)
            },
        )
        if label == "iteration-2" and after_settings:
            conditions = folder / "conditions.json"
            conditions.write_text(json.dumps(json.loads(conditions.read_text()) | after_settings))
    import_workspace([tmp_path])


def run_results(rate: float) -> dict[str, bool]:
    passed = round(rate * 4)
    return {f"a{i}": i <= passed for i in range(1, 5)}


def page(client: Client, query: str, **headers: str) -> str:
    response = client.get(COMPARE + "?" + query, **headers)
    assert response.status_code == 200, response.content[:300]
    return response.content.decode()


def paragraph(html: str, element_id: str) -> str:
    """The text of the element with that id, tags stripped and whitespace collapsed."""
    inner = html.split(f'id="{element_id}"', 1)[1].split("</p>", 1)[0]
    return " ".join(unescape(re.sub(r"<[^>]+>", "", inner.partition(">")[2])).split())


def eval_order(html: str) -> list[str]:
    body = html.split('id="compare-table"', 1)[1].split("</tbody>", 1)[0]
    return re.findall(r'<tr class="[^"]*">\s*<td><a href="[^"]*/evals/([^/"]+)/">', body)


# Two runs a side: every interval can be computed.
SPREAD_BEFORE = {
    "e1": ([0.5, 0.5], [0.25, 0.25]),
    "e2": ([0.25, 0.5], [0.25, 0.25]),
    "e3": ([0.75, 0.5], [0.5, 0.5]),
}
SPREAD_AFTER = {
    "e1": ([1.0, 1.0], [0.25, 0.25]),
    "e2": ([0.5, 0.75], [0.25, 0.0]),
    "e3": ([0.75, 1.0], [0.5, 0.5]),
}


def test_the_headline_is_the_change_of_the_delta_then_the_treatment(client, tmp_path) -> None:
    two_iterations(tmp_path, SPREAD_BEFORE, SPREAD_AFTER)

    html = page(client, "a=1&b=2")

    assert html.index('id="delta-change"') < html.index('id="treatment-change"')
    delta = paragraph(html, "delta-change")
    assert delta.startswith(
        "Change of the treatment − control delta, #1 (with_skill − without_skill"
    )
    assert "→ #2 (with_skill − without_skill" in delta
    # Per-eval deltas +0.25, +0.125, +0.125 → +0.75, +0.5, +0.375: each grew, by +0.375 on average.
    assert "#2 beats #1 by +0.38 (95% CI +0.06 to +0.69, p = 0.25, 3 evals)" in delta
    treatment = paragraph(html, "treatment-change")
    assert treatment.startswith("Treatment score, #1 (with_skill) → #2 (with_skill):")
    assert "95% CI" in treatment and "3 evals" in treatment
    # Three evals: the sign-flip test cannot reach 0.05, and the page says so.
    assert "With 3 evals the permutation test can never reach p &lt; 0.05" in html
    assert 'id="setting-changes"' not in html  # nothing else changed


def test_deltas_of_different_modes_get_no_verdict(client, tmp_path) -> None:
    two_iterations(tmp_path, SPREAD_BEFORE, SPREAD_AFTER, after_mode="revision")

    html = page(client, "a=1&b=2")

    delta = paragraph(html, "delta-change")
    assert "not comparable: #1 is a new-skill iteration (the skill against no skill)" in delta
    assert "#2 is a revision iteration" in delta and "measure different things" in delta
    assert "CI" not in delta and "beats" not in delta and "noise" not in delta
    assert "mode new-skill → revision" in paragraph(html, "setting-changes")
    # The treatment score still compares: with_skill against the revision's new_skill.
    assert paragraph(html, "treatment-change").startswith(
        "Treatment score, #1 (with_skill) → #2 (new_skill):"
    )


def test_a_change_of_model_and_harness_is_named_beside_the_verdict(client, tmp_path) -> None:
    settings = {"agent_model": "claude-opus-4-1", "harness": "messages"}
    two_iterations(tmp_path, SPREAD_BEFORE, SPREAD_AFTER, after_settings=settings)

    html = page(client, "a=1&b=2")

    changes = paragraph(html, "setting-changes")
    assert "agent model claude-haiku-4-5 → claude-opus-4-1" in changes
    assert "harness claude-code → messages" in changes
    assert "mixes the skill's with theirs" in changes
    assert "95% CI" in paragraph(html, "delta-change")  # still a verdict: same mode
    assert "Agent model differs" not in html  # named once, not again as a warning


def test_one_run_per_eval_that_did_not_move_has_no_interval(client, tmp_path) -> None:
    same = {"e1": ([1.0], [0.5]), "e2": ([0.5], [0.5]), "e3": ([0.75], [0.25])}
    two_iterations(tmp_path, same, {**same, "e1": ([1.0], [0.25])})

    html = page(client, "a=1&b=2")

    treatment = paragraph(html, "treatment-change")
    assert "no change: each of 3 evals scored the same in both (1 run per eval: no interval)" in (
        treatment
    )
    assert "0.00 to 0.00" not in html
    assert "1 run: no interval" in html  # and each row says why it has none


def test_rows_sort_in_natural_order_and_by_change(client, tmp_path) -> None:
    ids = ["10", "2", "100", "0", "1"]
    before = {i: ([0.5, 0.5], [0.25, 0.25]) for i in ids}
    after = {i: ([min(1.0, 0.25 * (n % 4)), 0.5], [0.25, 0.25]) for n, i in enumerate(ids)}
    two_iterations(tmp_path, before, after)

    assert eval_order(page(client, "a=1&b=2")) == ["0", "1", "2", "10", "100"]
    assert eval_order(page(client, "a=1&b=2&sort=-eval")) == ["100", "10", "2", "1", "0"]
    by_change = eval_order(page(client, "a=1&b=2&sort=-change"))
    # Changes: "10" 0.5→0.25 (−0.25), "2" → 0.375 (−0.125), "100" → 0.5 (0), "0" → 0.625
    # (+0.125), "1" → 0.25 (−0.25); ties keep the natural order.
    assert by_change == ["0", "100", "2", "1", "10"]


def test_the_direction_filter_counts_and_keeps_the_sort(client, tmp_path) -> None:
    before = {e: ([0.5, 0.5], [0.25, 0.25]) for e in ("up1", "up2", "down", "same")}
    after = {
        "up1": ([1.0, 1.0], [0.25, 0.25]),
        "up2": ([0.75, 0.75], [0.25, 0.25]),
        "down": ([0.25, 0.0], [0.25, 0.25]),
        "same": ([0.5, 0.5], [0.25, 0.25]),
    }
    two_iterations(tmp_path, before, after)

    html = page(client, "a=1&b=2&sort=-change")

    assert re.search(r"show=improved[^>]*>.*?▲ improved</span> 2</a>", html)
    assert re.search(r"show=regressed[^>]*>.*?▼ regressed</span> 1</a>", html)
    assert re.search(r"show=unchanged[^>]*>.*?= unchanged</span> 1</a>", html)
    assert "one side only" not in html  # no such eval: no such filter
    assert 'href="?a=1&amp;b=2&amp;sort=-change&amp;show=improved"' in html

    improved = page(client, "a=1&b=2&sort=-change&show=improved")
    assert eval_order(improved) == ["up1", "up2"]
    assert eval_order(page(client, "a=1&b=2&show=regressed")) == ["down"]
    # A bad value shows everything rather than an error.
    assert len(eval_order(page(client, "a=1&b=2&show=sideways&sort=nope"))) == 4


def test_a_long_comparison_shows_its_first_rows_and_groups_flips(client, tmp_path) -> None:
    ids = [f"e{n}" for n in range(30)]
    two_iterations(
        tmp_path,
        {e: ([0.5], [0.25]) for e in ids},
        {e: ([1.0], [0.25]) for e in ids},
    )

    html = page(client, "a=1&b=2")
    assert len(eval_order(html)) == 25
    assert "Show all 30 evals" in html and 'href="?a=1&amp;b=2&amp;rows=all"' in html
    assert len(eval_order(page(client, "a=1&b=2&rows=all"))) == 30
    # 60 flips (a3, a4 of each eval) in one collapsed group per eval, marked in words.
    assert html.count('<details class="flip-group"') == 30
    assert '<details class="flip-group" id="flips-e0" open>' not in html
    assert html.count("▲ fixed</span>") == 60
    assert html.count("▲ 2 fixed") == 30


def test_rows_and_flips_link_to_the_diff_each_eval_page_and_the_history(client, tmp_path) -> None:
    two_iterations(tmp_path, SPREAD_BEFORE, SPREAD_AFTER)

    html = page(client, "a=1&b=2")

    row = html.split('id="compare-table"', 1)[1].split("</tr>", 2)[1]
    assert 'href="/skills/demo-skill/iterations/1/evals/e1/"' in row
    assert 'href="/skills/demo-skill/iterations/2/evals/e1/"' in row
    diff = "/skills/demo-skill/iterations/1/evals/e1/diff/"
    diff += "?a=with_skill%2F1&amp;b=with_skill%2F1&amp;ib=2"
    assert f'href="{diff}"' in row
    flips = html.split('id="flips"', 1)[1]
    flip_links = re.findall(
        r'href="(/skills/demo-skill/iterations/1/evals/[^"]+/diff/[^"]+)"', flips
    )
    assert flip_links
    for address in [diff, *flip_links]:
        assert client.get(unescape(address)).status_code == 200
    # e1's a3 and a4 went from failing in both runs to passing: run 1 before, run 1 after.
    assert "evals/e1/diff/?a=with_skill%2F1&amp;b=with_skill%2F1&amp;ib=2" in flips
    # The row and its flips link to the eval's history across iterations.
    assert 'class="history-link" href="/skills/demo-skill/evals/e1/"' in row
    group = flips.split('id="flips-e1"', 1)[1].split("</summary>", 1)[0]
    assert 'href="/skills/demo-skill/evals/e1/"' in group
    assert client.get("/skills/demo-skill/evals/e1/").status_code == 200


def test_two_conditions_of_one_iteration_diff_within_it(client, tmp_path) -> None:
    two_iterations(tmp_path, SPREAD_BEFORE, SPREAD_AFTER)

    html = page(client, "a=2&b=2&ca=without_skill&cb=with_skill")

    assert 'id="delta-change"' not in html  # two conditions: no delta to compare
    assert paragraph(html, "treatment-change").startswith(
        "without_skill → with_skill: with_skill beats without_skill"
    )
    assert (
        'href="/skills/demo-skill/iterations/2/evals/e1/diff/?a=without_skill%2F1&amp;b=with_skill%2F1"'
        in html
    )


def test_what_agents_wrote_is_escaped(client, tmp_path) -> None:
    two_iterations(
        tmp_path,
        {XSS: ([0.5], [0.25]), "plain": ([0.5], [0.25])},
        {XSS: ([1.0], [0.25]), "plain": ([0.5], [0.25])},
        after_settings={"agent_model": XSS},
    )

    html = page(client, "a=1&b=2&sort=-change")

    assert XSS not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_the_htmx_table_is_the_fragment_alone(client, tmp_path) -> None:
    two_iterations(tmp_path, SPREAD_BEFORE, SPREAD_AFTER)

    html = page(client, "a=1&b=2&sort=-change", HTTP_HX_REQUEST="true")

    assert html.lstrip().startswith('<div id="compare-table"')
    assert "<html" not in html and 'id="delta-change"' not in html


def queries(client: Client, query: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        page(client, query)
    return len(captured)


@pytest.mark.parametrize("query", ["a=1&b=2", "a=1&b=2&sort=-delta&show=improved&rows=all"])
def test_the_page_asks_as_many_queries_for_40_evals_as_for_3(client, tmp_path, query) -> None:
    two_iterations(tmp_path / "small", SPREAD_BEFORE, SPREAD_AFTER)
    small = queries(client, query)
    Skill.objects.all().delete()
    ids = [f"e{n}" for n in range(40)]
    two_iterations(
        tmp_path / "large",
        {e: ([0.5, 0.25, 0.5], [0.25, 0.5, 0.25]) for e in ids},
        {e: ([1.0, 0.75, 0.5], [0.25, 0.0, 0.25]) for e in ids},
    )
    assert queries(client, query) == small


def test_a_shared_skill_links_only_diffs_its_link_opens(user, tmp_path) -> None:
    from django.urls import reverse

    from accounts.sharing import share_view

    two_iterations(tmp_path, SPREAD_BEFORE, SPREAD_AFTER)
    skill_link = share_view(creator=user, address="/skills/demo-skill/")
    visitor = Client()
    visitor.get(reverse("share", args=[skill_link.secret]))

    across = page(visitor, "a=1&b=2")
    within = page(visitor, "a=2&b=2&ca=without_skill&cb=with_skill")

    # A skill's link opens diffs across its iterations and within one: every link opens.
    for html in (across, within):
        diffs = re.findall(r'href="(/skills/demo-skill/iterations/\d+/evals/e1/diff/[^"]+)"', html)
        assert diffs and all(visitor.get(unescape(d)).status_code == 200 for d in diffs)
    assert 'href="/skills/demo-skill/evals/e1/"' in across  # and the eval's history

    # A comparison's link opens that comparison only: no diff, no eval page, no history.
    compare_link = share_view(creator=user, address="/skills/demo-skill/compare/?a=1&b=2")
    outsider = Client()
    outsider.get(reverse("share", args=[compare_link.secret]))
    shared = page(outsider, "a=1&b=2")
    assert "/diff/" not in shared and "/evals/e1/" not in shared


@pytest.mark.parametrize(
    "eval_id", ["e1", "with space", "a&b'c", "100%", "ünï-çødé", "q?x#y", "semi;colon", "a/b", ""]
)
def test_row_addresses_are_what_reverse_gives(rf, eval_id) -> None:
    """The rows' links are reversed once per page and the eval id quoted in; each must be
    the address `reverse` gives, and none where no address can hold the id."""
    from django.urls import NoReverseMatch, reverse

    from runs.templatetags.compare import EvalAddresses

    request = rf.get("/")
    for name, args in (
        ("runs:eval", ["demo skill&1", 3]),
        ("runs:diff", ["demo-skill", 12]),
        ("runs:eval_history", ["dëmo"]),
    ):
        try:
            expected = reverse(name, args=[*args, eval_id])
        except NoReverseMatch:
            expected = ""
        assert EvalAddresses(request, name, *args)(eval_id) == expected


def test_outcomes_leave_errored_runs_out_whether_read_by_join_or_by_the_runs(tmp_path) -> None:
    """The compare page drops errored runs' results by its run rows, not by a join: the same
    rows either way."""
    from runs.models import Iteration, Run
    from runs.reading.samples import assertion_outcomes, run_samples

    two_iterations(tmp_path, SPREAD_BEFORE, SPREAD_AFTER)
    iteration = Iteration.objects.get(number=1)
    Run.objects.filter(iteration=iteration, eval_id="e2", run_index=1).update(status="errored")

    def key(row: dict) -> tuple:
        return tuple(sorted(row.items()))

    joined = assertion_outcomes([iteration])
    by_runs = assertion_outcomes([iteration], run_samples(iteration))
    assert sorted(map(key, by_runs)) == sorted(map(key, joined))
    assert len(joined) == 3 * 2 * 2 * 4 - 2 * 4  # 3 evals x 2 conditions x 2 runs x a1–a4
    assert not [r for r in joined if r["eval_id"] == "e2" and r["run_index"] == 1]


def test_row_addresses_ask_an_eval_scoped_link_about_each_eval(user, rf, tmp_path) -> None:
    """A link to one eval opens that eval's page only: asked per eval id, not once per view."""
    from accounts.sharing import share_view
    from runs.templatetags.compare import EvalAddresses

    two_iterations(tmp_path, SPREAD_BEFORE, SPREAD_AFTER)
    request = rf.get("/")
    request.share_link = share_view(
        creator=user, address="/skills/demo-skill/iterations/1/evals/e1/"
    ).link
    eval_pages = EvalAddresses(request, "runs:eval", "demo-skill", 1)
    assert eval_pages("e1") == "/skills/demo-skill/iterations/1/evals/e1/"
    assert eval_pages("e2") == ""
    assert EvalAddresses(request, "runs:eval", "demo-skill", 2)("e1") == ""
    assert EvalAddresses(request, "runs:eval_history", "demo-skill")("e1") == ""
