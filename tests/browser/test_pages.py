"""What a person sees and does in Chromium on the bundled sample: charts, htmx, copy, escaping."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser import CHROMIUM

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(
    not CHROMIUM.is_file(),
    reason=f"no Chromium at {CHROMIUM} (install Debian's chromium or set EVALSITE_CHROMIUM)",
)

Screenshot = Callable[[str], Path]

SKILL = "/skills/taming-flaky-tests/"
ITERATION_3 = f"{SKILL}iterations/3/"
TIMEZONE_EVAL = f"{ITERATION_3}evals/timezone-boundary-flake/"
TIMEZONE_RUN = f"{TIMEZONE_EVAL}with_skill/1/"
XSS = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>")
#: The skill page's charts: the four trends, and the sample's Triggering panel's.
CHARTS = ("chart-score", "chart-delta", "chart-invocation", "chart-cost", "chart-triggers")


def mark_document(page: Page) -> None:
    """Tag the loaded document, so a later check can tell an htmx swap from a page load."""
    page.evaluate("window.evalsiteSameDocument = true")


def is_same_document(page: Page) -> bool:
    return page.evaluate("window.evalsiteSameDocument === true")


def matrix_evals(page: Page) -> Locator:
    return page.locator("#matrix tbody tr td:first-child > a:first-child")


def expect_charts_drawn(page: Page) -> None:
    for chart in CHARTS:
        element = page.locator(f'[data-chart="{chart}"]')
        expect(element).to_have_class(re.compile(r"\bjs-plotly-plot\b"))
        expect(element.locator("svg.main-svg").first).to_be_visible()
        expect(element.locator("g.trace").first).to_be_attached()  # data, not just axes


def show_conversation(page: Page, slot: str) -> int:
    """Click the slot's "Show conversation (N events)" and wait for its N events."""
    link = page.locator(f"#{slot}").get_by_role("link", name=re.compile("^Show conversation"))
    announced = int(re.search(r"\((\d+) events?\)", link.inner_text()).group(1))
    link.click()
    expect(page.locator(f"#{slot} ol.conversation > li.event")).to_have_count(announced)
    return announced


def open_tool_call(conversation: Locator, name: str, argument: str) -> Locator:
    """Unfold the conversation's call of the tool `name` whose arguments mention `argument`."""
    page = conversation.page
    call = (
        conversation.locator("li.event.tool_invocation")
        .filter(has=page.locator("summary > code", has_text=re.compile(f"^{name}$")))
        .filter(has=page.locator("summary", has_text=argument))
    )
    call.locator("summary").click()
    expect(call.locator("details")).to_have_attribute("open", "")
    return call


def expect_agents_words_shown_as_text(page: Page, conversation: Locator) -> None:
    """The sample's payloads read as text wherever with_skill run 1 wrote them; none is markup."""
    reading = open_tool_call(conversation, "Read", "tests/test_escaping.py")
    places = {
        "final message": page.locator("#run-with_skill-1 details.final .text"),
        "last assistant message": conversation.locator("li.assistant_message .text").last,
        "result of reading test_escaping.py": reading.locator("pre").last,
    }
    for where, place in places.items():
        expect(place).to_be_visible()
        text = place.inner_text()
        for payload in XSS:
            assert payload in text, f"{payload!r} is not shown as text in the {where}"
    expect(page.locator('img[src="x"]')).to_have_count(0)
    expect(page.locator("script", has_text="alert(1)")).to_have_count(0)


def test_the_overview_lists_both_skills_and_links_to_each(
    page: Page, screenshot: Screenshot
) -> None:
    page.goto("/")

    skills = page.locator("#skill-table tbody td:first-child strong").all_inner_texts()
    assert sorted(skills) == ["changelog-from-commits", "taming-flaky-tests"]
    screenshot("overview")

    page.get_by_role("link", name="taming-flaky-tests", exact=True).click()

    expect(page).to_have_url(re.compile(f"{SKILL}$"))
    expect(page.locator("h1")).to_have_text("taming-flaky-tests")
    screenshot("skill")


def test_the_skill_page_draws_every_trend_chart(page: Page, screenshot: Screenshot) -> None:
    page.goto(SKILL)

    expect(page.locator("[data-chart]")).to_have_count(len(CHARTS))
    expect_charts_drawn(page)
    screenshot("skill")


def test_the_flaky_filter_updates_the_matrix_in_place_and_the_url(
    page: Page, screenshot: Screenshot
) -> None:
    page.goto(ITERATION_3)
    expect(matrix_evals(page)).to_contain_text(["ci-only-timeout", "order-dependent-cache"])
    mark_document(page)

    with page.expect_response(
        lambda r: "only=flaky" in r.url and r.request.headers.get("hx-request") == "true"
    ):
        page.get_by_label("only flaky").check()

    expect(matrix_evals(page)).to_have_text(["order-dependent-cache"])
    expect(page).to_have_url(re.compile(r"[?&]only=flaky\b"))
    assert is_same_document(page), "the filter reloaded the page instead of swapping #matrix"
    screenshot("filtered")

    page.reload()

    assert not is_same_document(page)
    expect(matrix_evals(page)).to_have_text(["order-dependent-cache"])
    expect(page.get_by_label("only flaky")).to_be_checked()
    screenshot("reloaded")


def test_the_compare_form_shows_per_eval_changes_and_flipped_assertions(
    page: Page, screenshot: Screenshot
) -> None:
    page.goto(f"{SKILL}compare/")
    form = page.locator("form.filters")
    form.locator('select[name="a"]').select_option("2")
    form.locator('select[name="b"]').select_option("3")
    screenshot("form")

    form.get_by_role("button", name="Compare", exact=True).click()

    page.wait_for_url(re.compile(r"/compare/\?"))
    query = parse_qs(urlsplit(page.url).query)
    assert (query["a"], query["b"]) == (["2"], ["3"])
    per_eval = page.locator("#compare-table table.compare")
    expect(per_eval.locator("tbody td:first-child > a:first-child")).to_have_text(
        [
            "ci-only-timeout",
            "order-dependent-cache",
            "rename-test-helper",
            "rerun-budget-question",
            "timezone-boundary-flake",
        ]
    )
    rerun = per_eval.locator("tbody tr", has_text="rerun-budget-question")
    expect(rerun.locator("td").nth(1)).to_have_text("0.50")
    expect(rerun.locator("td").nth(2)).to_have_text("1.00")
    # Flips are grouped by eval, each marked in words as well as colour.
    group = page.locator("details.flip-group", has_text="order-dependent-cache")
    broke = group.locator("tbody tr", has_text="names_shared_state")
    expect(broke).to_contain_text("▼ broke")
    expect(group.locator("tbody tr", has_text="▲ fixed").first).to_be_visible()
    screenshot("comparison")


def test_show_conversation_loads_the_events_into_the_eval_page(
    page: Page, screenshot: Screenshot
) -> None:
    page.goto(TIMEZONE_EVAL)
    mark_document(page)

    events = show_conversation(page, "conversation-with_skill-1")

    assert events == 13
    assert is_same_document(page), "the conversation opened a new page instead of loading in place"
    expect(page).to_have_url(re.compile(f"{TIMEZONE_EVAL}$"))
    slot = page.locator("#conversation-with_skill-1")
    expect(slot.locator("li.event.user_message").first).to_contain_text("fails for some people")
    expect(slot.locator("li.event.tool_invocation code").first).to_have_text("Skill")
    expect(page.locator("#conversation-without_skill-1 ol.conversation")).to_have_count(0)
    screenshot("conversation")


def test_what_agents_wrote_shows_as_text_and_runs_no_script(
    page: Page, dialogs: list[str], screenshot: Screenshot
) -> None:
    page.goto(TIMEZONE_EVAL)
    show_conversation(page, "conversation-with_skill-1")

    expect_agents_words_shown_as_text(page, page.locator("#conversation-with_skill-1"))
    screenshot("eval")

    page.goto(TIMEZONE_RUN)

    expect_agents_words_shown_as_text(page, page.locator("ol.conversation"))
    screenshot("run")
    assert dialogs == []


def test_copy_link_copies_the_address_with_its_filters(
    page: Page, live_server, screenshot: Screenshot
) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.clock.install()  # lets the test skip the 2 s the button says "Copied"
    page.goto(ITERATION_3)
    page.get_by_label("only flaky").check()
    expect(page).to_have_url(re.compile(r"[?&]only=flaky\b"))
    # Not get_by_role(name="Copy link"): the name is the label, which the click changes.
    button = page.locator("header.site [data-copy-link]")

    button.click()

    expect(button).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == page.url
    screenshot("copied")
    page.clock.fast_forward(2_000)
    expect(button).to_have_text("Copy link")


def test_no_page_logs_a_javascript_error(
    page: Page, js_errors: list[str], screenshot: Screenshot
) -> None:
    page.goto("/")
    screenshot("overview")
    page.goto(SKILL)
    expect_charts_drawn(page)
    screenshot("skill")
    page.goto(ITERATION_3)
    page.get_by_label("only flaky").check()
    expect(matrix_evals(page)).to_have_text(["order-dependent-cache"])
    screenshot("iteration")
    page.goto(f"{SKILL}compare/?a=2&b=3")
    screenshot("compare")
    page.goto(TIMEZONE_EVAL)
    show_conversation(page, "conversation-with_skill-1")
    screenshot("eval")
    page.goto(TIMEZONE_RUN)
    copy = page.locator("[data-copy-link]")
    copy.click()
    expect(copy).to_have_text(re.compile("^Cop(ied|y failed)$"))
    screenshot("run")

    assert js_errors == []
