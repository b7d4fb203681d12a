"""Every page and fragment of the dashboard, on the bundled sample and on edge data."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from runs.importing import import_workspace
from tests.factories import eval_magic_iteration, skill_creator_iteration, skill_folder, write_json

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SKILL = "/skills/taming-flaky-tests/"
XSS = "<script>alert(1)</script>"


@pytest.fixture
def sample() -> None:
    import_workspace([ROOT / "runs" / "sample"])


def page(client: Client, url: str, status: int = 200, **headers: str) -> str:
    response = client.get(url, **headers)
    assert response.status_code == status, response.content[:500]
    return response.content.decode()


def test_the_overview_tells_a_new_user_how_to_import(client: Client) -> None:
    html = page(client, "/")

    assert "No results yet." in html
    assert "python manage.py importworkspace" in html


def test_the_overview_lists_every_skill_with_its_latest_delta(client: Client, sample) -> None:
    html = page(client, "/")

    assert 'href="/skills/taming-flaky-tests/"' in html
    assert 'href="/skills/changelog-from-commits/"' in html
    assert "<svg" in html  # sparkline of the recent deltas
    assert 'href="/skills/taming-flaky-tests/iterations/4/"' in html


def test_the_overview_filters_and_sorts_through_the_url(client: Client, sample) -> None:
    html = page(client, "/?q=changelog")
    assert "changelog-from-commits" in html and "taming-flaky-tests</strong>" not in html

    by_name = page(client, "/?sort=name")
    assert by_name.index("changelog-from-commits</strong>") < by_name.index(
        "taming-flaky-tests</strong>"
    )
    reversed_names = page(client, "/?sort=-name")
    assert reversed_names.index("taming-flaky-tests</strong>") < reversed_names.index(
        "changelog-from-commits</strong>"
    )


def test_the_overview_table_is_a_fragment_for_htmx(client: Client, sample) -> None:
    html = page(client, "/?q=taming", HTTP_HX_REQUEST="true")

    assert html.lstrip().startswith('<div id="skill-table"')
    assert "<html" not in html


def test_the_skill_page_has_trend_charts_a_table_and_notes(client: Client, sample) -> None:
    html = page(client, SKILL)

    for chart in ("chart-score", "chart-delta", "chart-invocation", "chart-cost"):
        assert f'id="{chart}"' in html and f'data-chart="{chart}"' in html
    assert "vendor/plotly.min.js" in html
    for number in (1, 2, 3, 4):
        assert f'href="{SKILL}iterations/{number}/"' in html
    # #3's interval excludes 0 but 5 evals cannot rule out chance (p = 0.125): not "significant".
    assert ">suggestive</span>" in html and ">significant</span>" not in html


def test_a_skill_without_iterations_says_how_to_get_some(client: Client, tmp_path: Path) -> None:
    import_workspace([skill_folder(tmp_path, name="lonely")])

    html = page(client, "/skills/lonely/")

    assert "No iterations of lonely yet." in html
    assert "vendor/plotly.min.js" not in html


def test_missing_things_get_a_clear_404(client: Client, sample) -> None:
    assert "No skill named “nope”." in page(client, "/skills/nope/", 404)
    assert "taming-flaky-tests has no iteration #9." in page(client, f"{SKILL}iterations/9/", 404)
    assert "has no eval “nope”" in page(client, f"{SKILL}iterations/1/evals/nope/", 404)
    assert "has no run 7" in page(
        client, f"{SKILL}iterations/1/evals/ci-only-timeout/with_skill/7/", 404
    )


def test_the_iteration_page_puts_warnings_before_the_verdict(client: Client, sample) -> None:
    html = page(client, f"{SKILL}iterations/2/")

    assert html.index("Validity warnings") < html.index('class="verdict"')
    assert "1 run(s) have no grading" in html
    assert "1 ungraded" in html  # the matrix marks the cell
    assert "difference not distinguishable from noise" in html


def test_the_iteration_matrix_filters_in_place_and_in_the_url(client: Client, sample) -> None:
    everything = page(client, f"{SKILL}iterations/3/")
    flaky = page(client, f"{SKILL}iterations/3/?only=flaky", HTTP_HX_REQUEST="true")

    assert flaky.lstrip().startswith('<div id="matrix"')
    assert "order-dependent-cache" in flaky
    assert "ci-only-timeout" not in flaky
    assert "ci-only-timeout" in everything
    assert 'hx-push-url="true"' in everything


def test_the_iteration_page_shows_assertion_analysis_and_feedback(client: Client, sample) -> None:
    html = page(client, f"{SKILL}iterations/3/")
    assert "Pass only with the skill" in html and "Always pass in both" in html
    assert "Flaky assertions" in html

    feedback = page(client, "/skills/changelog-from-commits/iterations/2/")
    assert "skill-creator feedback.json" in feedback


def test_a_revision_iteration_compares_new_with_old(client: Client, sample) -> None:
    html = page(client, f"{SKILL}iterations/4/")

    verdict = html.split('class="verdict"')[1].split("</p>")[0]
    assert "new_skill − old_skill:" in verdict


def test_a_single_condition_iteration_renders(client: Client, tmp_path: Path) -> None:
    import_workspace(
        [
            eval_magic_iteration(
                tmp_path, conditions=["with_skill"], cells={("alpha", "with_skill"): [{"a": True}]}
            )
        ]
    )

    html = page(client, "/skills/demo-skill/iterations/1/")

    assert "only with_skill ran: nothing to compare it with" in html


def test_evals_are_filtered_by_tag(client: Client, tmp_path: Path) -> None:
    folder = tmp_path / "tagged"
    write_json(
        folder / "evals" / "evals.json",
        {
            "skill_name": "tagged",
            "schema_version": 1,
            "evals": [
                {
                    "id": "one",
                    "prompt": "First prompt here.",
                    "expectations": ["Does it well"],
                    "tags": ["regression"],
                },
                {"id": "two", "prompt": "Second prompt here.", "expectations": ["Does it well"]},
            ],
        },
    )
    ws = tmp_path / "ws"
    eval_magic_iteration(
        ws,
        skill="tagged",
        cells={
            (e, c): [{"does-it-well": True}]
            for e in ("one", "two")
            for c in ("with_skill", "without_skill")
        },
    )
    import_workspace([folder, ws])

    html = page(client, "/skills/tagged/iterations/1/?tag=regression")

    matrix = html.split('id="matrix"')[1]
    assert "/evals/one/" in matrix and "/evals/two/" not in matrix


def test_the_eval_page_escapes_what_agents_wrote(client: Client, sample) -> None:
    html = page(client, f"{SKILL}iterations/3/evals/timezone-boundary-flake/")

    assert XSS not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img src=x" not in html
    assert "Show conversation (" in html  # loaded on demand, not inline
    assert 'class="event' not in html


def test_the_eval_page_marks_low_confidence_results(client: Client, sample) -> None:
    html = page(client, f"{SKILL}iterations/3/evals/ci-only-timeout/")

    assert "needs review" in html
    assert "confidence 0.55" in html


def test_the_run_page_shows_the_conversation_escaped(client: Client, sample) -> None:
    html = page(client, f"{SKILL}iterations/3/evals/timezone-boundary-flake/with_skill/1/")

    assert 'id="conversation"' in html
    assert 'class="event tool_invocation"' in html
    assert XSS not in html


def test_the_conversation_fragment_loads_alone(client: Client, sample) -> None:
    url = f"{SKILL}iterations/3/evals/timezone-boundary-flake/with_skill/1/conversation/"

    html = page(client, url, HTTP_HX_REQUEST="true")

    assert html.lstrip().startswith('<ol class="conversation">')
    assert XSS not in html


def test_the_compare_page_highlights_flips_and_absent_evals(client: Client, sample) -> None:
    html = page(client, f"{SKILL}compare/?a=1&b=3")

    assert "Assertions that flipped" in html
    assert "▲ fixed" in html or "▼ broke" in html  # a mark and a word, not colour alone
    assert '<select name="a">' in html


def test_the_compare_page_warns_when_evals_differ(client: Client, tmp_path: Path) -> None:
    eval_magic_iteration(tmp_path / "a", timestamp="2026-05-01T00:00:00Z")
    eval_magic_iteration(
        tmp_path / "b",
        timestamp="2026-05-02T00:00:00Z",
        cells={
            ("beta", "with_skill"): [{"b": True}],
            ("beta", "without_skill"): [{"b": False}],
        },
    )
    import_workspace([tmp_path / "a", tmp_path / "b"])

    html = page(client, "/skills/demo-skill/compare/?a=1&b=2")

    assert "Not like for like" in html
    assert "Evals only in #1: alpha." in html
    assert "absent" in html


def test_the_compare_page_compares_two_conditions_of_one_iteration(client: Client, sample) -> None:
    html = page(client, f"{SKILL}compare/?a=3&b=3&ca=without_skill&cb=with_skill")

    assert "with_skill beats without_skill" in html


def test_the_compare_page_rejects_an_unknown_condition(client: Client, sample) -> None:
    assert "has no condition “nope”" in page(client, f"{SKILL}compare/?a=3&b=3&ca=nope", 404)


def test_the_benchmark_json_is_eval_magics_own(client: Client, sample) -> None:
    data = client.get(f"{SKILL}iterations/4/benchmark.json").json()

    assert data["delta"]["direction"] == "old_skill - new_skill"


def test_a_skill_creator_eval_is_read_by_its_name_and_addressed_by_its_id(
    client: Client, tmp_path: Path
) -> None:
    import_workspace([skill_creator_iteration(tmp_path).parent])  # eval 0, "summarise"
    base = "/skills/creator-skill/iterations/1"

    matrix = page(client, f"{base}/")
    assert f'<a href="{base}/evals/0/">summarise</a> <code class="muted small">0</code>' in matrix

    eval_page = page(client, f"{base}/evals/0/")
    assert '<h1>summarise <code class="muted small">0</code>' in eval_page
    assert f'<a href="{base}/evals/0/">summarise</a>' in eval_page  # the crumbs
    run_page = page(client, f"{base}/evals/0/with_skill/1/")
    assert '<h1>summarise <code class="muted small">0</code>' in run_page
    assert "<title>summarise with_skill run 1" in run_page


def test_an_eval_without_a_name_is_read_by_its_id_alone(client: Client, tmp_path: Path) -> None:
    import_workspace([eval_magic_iteration(tmp_path)])

    html = page(client, "/skills/demo-skill/iterations/1/evals/alpha/")

    assert "<h1>alpha <span" in html


def test_the_compare_page_without_a_choice_opens_the_latest_against_the_one_before(
    client: Client, sample
) -> None:
    response = client.get("/skills/taming-flaky-tests/compare/")

    assert response.status_code == 302
    assert response["Location"].endswith("/skills/taming-flaky-tests/compare/?a=3&b=4")
    html = page(client, response["Location"])
    assert '<option value="3" selected>' in html and '<option value="4" selected>' in html
    assert 'id="treatment-change"' in html  # the comparison itself, not an empty form


def test_comparing_two_conditions_names_each_once(client: Client, sample) -> None:
    html = page(client, "/skills/taming-flaky-tests/compare/?a=4&b=4&ca=old_skill&cb=new_skill")

    assert "old_skill → new_skill" in html.replace('<p class="verdict">', "")
    assert "old_skill (old_skill)" not in html and "<th>old_skill old_skill</th>" not in html


@pytest.fixture
def big_iteration(tmp_path: Path) -> str:
    """An iteration of 60 evals, each with an assertion only the skill passes."""
    cells = {}
    for i in range(60):
        cells[(f"eval-{i:02d}", "with_skill")] = [{"helps": True, "always": True}] * 2
        cells[(f"eval-{i:02d}", "without_skill")] = [{"helps": False, "always": True}] * 2
    eval_magic_iteration(tmp_path, skill="big", cells=cells)
    import_workspace([tmp_path])
    return "/skills/big/iterations/1/"


def test_a_big_iteration_shows_its_first_rows_and_lists_with_counts(
    client: Client, big_iteration: str
) -> None:
    from runs.reading.iteration import LIST_FIRST_ITEMS, MATRIX_PAGE_ROWS

    html = page(client, big_iteration)
    matrix = html.split('id="matrix"')[1].split("</table>")[0]
    assert matrix.count("/iterations/1/evals/eval-") == MATRIX_PAGE_ROWS  # a link per row
    assert matrix.count('class="history-link small"') == MATRIX_PAGE_ROWS  # and its history
    assert "Show all 60 evals" in html and "?rows=all" in html
    classes = html.split('id="assertion-classes"')[1].split('class="more"')[0]
    assert classes.count("<code>helps</code>") == LIST_FIRST_ITEMS
    assert "… 60 in all" in classes
    assert f'href="{big_iteration}assertions/"' in html

    everything = page(client, f"{big_iteration}?rows=all")
    matrix = everything.split('id="matrix"')[1].split("</table>")[0]
    assert matrix.count("/iterations/1/evals/eval-") == 60
    assert "Show all 60 evals" not in everything

    fragment = page(client, f"{big_iteration}?rows=all", HTTP_HX_REQUEST="true")
    assert fragment.lstrip().startswith('<div id="matrix"')

    listed = page(client, f"{big_iteration}assertions/")
    assert listed.count("<code>helps</code>") == 60 and "<html" in listed
    alone = page(client, f"{big_iteration}assertions/", HTTP_HX_REQUEST="true")
    assert alone.count("<code>helps</code>") == 60 and "<html" not in alone


def test_htmx_restoring_history_gets_the_whole_page(client: Client, sample) -> None:
    headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}
    for url in (f"{SKILL}iterations/3/?only=flaky", "/?q=flaky"):
        assert "<html" in page(client, url, **headers), url
        assert "<html" not in page(client, url, HTTP_HX_REQUEST="true"), url


def test_a_tag_in_the_address_has_a_control_and_says_it_filters(client: Client, sample) -> None:
    html = page(client, f"{SKILL}iterations/3/?tag=nightly")
    assert '<option value="nightly" selected>nightly (no eval)</option>' in html
    assert "Filtered by tag <strong>nightly</strong>: 0 of 5 evals." in html


def test_with_five_evals_the_page_says_significance_is_out_of_reach(client: Client, sample) -> None:
    html = page(client, f"{SKILL}iterations/3/")
    note = html.split('class="power-note">')[1].split("</p>")[0]
    assert note.startswith("With 5 evals the permutation test can never reach p &lt; 0.05")
    assert "needs about" in note or "Add evals" in note


def test_every_chart_has_its_numbers_in_a_table(client: Client, sample) -> None:
    html = page(client, SKILL)
    for chart in ("chart-score", "chart-delta", "chart-invocation", "chart-cost"):
        figure = html.split(f'data-chart="{chart}"')[1].split("</figure>")[0]
        assert '<details class="chart-data" open>' in figure
        assert "<table" in figure, chart
    assert "with_skill mean duration" in html
    assert '<script id="chart-score" type="application/json">' in html


def test_a_skill_creator_skill_says_its_tool_records_no_invocation(client: Client, sample) -> None:
    html = page(client, "/skills/changelog-from-commits/")
    figure = html.split('data-chart="chart-invocation"')[1].split("</figure>")[0]
    assert "Skill invocation not recorded by skill-creator" in figure


def test_a_tiny_token_difference_is_not_priced(client: Client, sample) -> None:
    from runs.reading.summaries import meaningful_token_difference

    assert not meaningful_token_difference(120, 30_000)
    assert not meaningful_token_difference(900, 30_000)  # under 5%
    assert meaningful_token_difference(4_000, 30_000)
    html = page(client, f"{SKILL}iterations/3/")
    assert "Pass-rate gain per extra 1k tokens" in html  # 37.9k against 33.1k


def test_error_pages_are_styled_and_offer_no_share_button(client: Client, sample) -> None:
    from django.test import RequestFactory
    from django.views.defaults import permission_denied, server_error

    html = page(client, "/skills/no-such-skill/", status=404)
    assert 'class="error-page"' in html and "No skill named" in html
    assert "Create link" not in html and "data-copy-link" not in html
    request = RequestFactory().get("/")
    for response in (server_error(request), permission_denied(request, Exception("no"))):
        body = response.content.decode()
        assert 'class="error-page"' in body and "evalsite.css" in body
        assert "Create link" not in body


def test_comparing_two_iterations_names_their_conditions_once(client: Client, sample) -> None:
    html = page(client, f"{SKILL}compare/?a=2&b=3")
    verdict = html.split('id="delta-change">')[1].split("</p>")[0]
    assert verdict.count("with_skill − without_skill") == 2  # once a side, with its delta
    assert "Change of the treatment − control delta, #2" in verdict
