"""The dashboard as reviewers meet it (issue #14): phones, shared views, no JavaScript,
filters and Back, one colour per condition; and screenshots of every page type."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from tests.browser import CHROMIUM
from tests.browser.pages import (
    DOCS_PAGES,
    DOCS_SHOTS,
    EVAL,
    ITERATION,
    OTHER_SKILL,
    PAGE_SHOTS,
    PAGES,
    SKILL,
    WIDTHS,
    log_in,
    new_context,
    settle,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no Chromium at {CHROMIUM}")

CHARTS = ("chart-score", "chart-delta", "chart-invocation", "chart-cost")


def test_every_page_is_photographed_at_a_desktop_s_width(
    browser: Browser, live_server, triggers: None, campaign: int
) -> None:
    # At a phone's width: tests/browser/test_phone_width.py, which also checks that none
    # scrolls sideways.
    PAGE_SHOTS.mkdir(parents=True, exist_ok=True)
    DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
    width = WIDTHS["desktop"]
    context = new_context(browser, live_server, width)
    page = context.new_page()
    log_in(page)
    try:
        for name, address in PAGES.items():
            page.goto(address.format(campaign=campaign))
            settle(page)
            page.evaluate("window.scrollTo(0, 0)")
            # The window-sized shot first: a full-page shot resizes the window, and the charts
            # redraw for a moment after it.
            if name in DOCS_PAGES:
                page.screenshot(path=DOCS_SHOTS / f"{name}-{width}.png")
            page.screenshot(path=PAGE_SHOTS / f"{name}-{width}.png", full_page=True)
    finally:
        context.close()


def test_wide_tables_scroll_in_their_box_with_the_first_column_kept(
    browser: Browser, live_server, sample: None
) -> None:
    context = new_context(browser, live_server, WIDTHS["phone"])
    page = context.new_page()
    log_in(page)
    page.goto(ITERATION)
    box = page.locator("#matrix .table-scroll")
    assert box.evaluate("e => e.scrollWidth > e.clientWidth"), "the matrix fits: nothing to test"
    first = page.locator("#matrix tbody tr td:first-child").first
    before = first.bounding_box()["x"]
    box.evaluate("e => { e.scrollLeft = 400; }")
    assert first.bounding_box()["x"] == pytest.approx(before, abs=1)
    header = page.locator("header.site")
    assert header.evaluate("e => e.scrollWidth <= e.clientWidth")
    context.close()


def test_a_share_link_visitor_can_click_everything_and_never_meets_the_login(
    page: Page, browser: Browser, live_server
) -> None:
    page.goto(ITERATION)
    page.locator("summary", has_text="Share").click()
    page.get_by_role("button", name="Create link").click()
    link = page.locator("pre[data-secret]").inner_text().strip()

    context = new_context(browser, live_server, WIDTHS["desktop"])
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    outsider = context.new_page()
    visited: list[str] = []

    def never_login() -> None:
        assert "/accounts/login/" not in outsider.url, f"login page after {visited[-1]}"

    outsider.goto(link)
    expect(outsider).to_have_url(re.compile(f"{ITERATION}$"))
    hrefs = outsider.eval_on_selector_all("a[href]:not([download])", "els => els.map(e => e.href)")
    downloads = outsider.eval_on_selector_all("a[download]", "els => els.map(e => e.href)")
    assert len(hrefs) > 5 and downloads
    for href in dict.fromkeys(hrefs):
        visited.append(href)
        response = outsider.goto(href)
        assert response is not None and response.status < 400, href
        never_login()
    for href in dict.fromkeys(downloads):  # a download is fetched, not navigated to
        response = context.request.get(href, max_redirects=0)
        assert response.status == 200, href
        assert "attachment" in response.headers.get("content-disposition", ""), href
    outsider.goto(ITERATION)
    for index in range(outsider.locator("button:visible, summary:visible").count()):
        control = outsider.locator("button:visible, summary:visible").nth(index)
        visited.append(f"button {control.inner_text()!r}")
        control.click()
        never_login()

    # Copy link copies the share link, which opens this page for someone with no session.
    outsider.goto(EVAL)
    outsider.locator("header.site [data-copy-link]").click()
    copied = outsider.evaluate("navigator.clipboard.readText()")
    assert urlsplit(copied).path.startswith("/s/")
    stranger = new_context(browser, live_server, WIDTHS["desktop"]).new_page()
    stranger.goto(copied)
    expect(stranger).to_have_url(re.compile(f"{EVAL}$"))
    expect(stranger.locator("h1")).to_contain_text("timezone-boundary-flake")
    stranger.context.close()
    context.close()


def test_without_javascript_every_chart_is_a_table_and_no_dead_control_shows(
    browser: Browser, live_server, page: Page
) -> None:
    cookies = page.context.cookies()
    context = new_context(browser, live_server, WIDTHS["desktop"], java_script_enabled=False)
    context.add_cookies(cookies)  # the logged-in session of `page`
    plain = context.new_page()
    plain.goto(SKILL)
    for chart in CHARTS:
        figure = plain.locator("figure", has=plain.locator(f'[data-chart="{chart}"]'))
        expect(figure.locator(f'[data-chart="{chart}"]')).to_be_hidden()
        expect(figure.locator("details.chart-data table")).to_be_visible()
    cost = plain.locator("figure", has=plain.locator('[data-chart="chart-cost"]'))
    expect(cost.locator("thead")).to_contain_text("mean duration")
    expect(plain.locator("[data-copy-link]")).to_be_hidden()
    plain.screenshot(path=PAGE_SHOTS.parent / "skill-without-javascript.png", full_page=True)
    plain.goto(f"{OTHER_SKILL}")
    invocation = plain.locator("figure", has=plain.locator('[data-chart="chart-invocation"]'))
    expect(invocation).to_contain_text("not recorded by skill-creator")
    context.close()


def test_with_javascript_the_tables_fold_under_the_drawn_charts(page: Page) -> None:
    page.goto(SKILL)
    for chart in CHARTS:
        expect(page.locator(f'[data-chart="{chart}"]')).to_have_attribute("data-chart-rendered", "")
    expect(page.locator("details.chart-data[open]")).to_have_count(0)
    expect(page.locator("header.site [data-copy-link]")).to_be_visible()


def test_the_filters_survive_back_and_forward(page: Page) -> None:
    page.goto(ITERATION)
    flaky, failures = page.get_by_label("only flaky"), page.get_by_label("only failures")

    flaky.check()
    expect(page).to_have_url(re.compile(r"\?only=flaky$"))
    failures.check()
    expect(page).to_have_url(re.compile(r"only=flaky&only=failures$|only=failures&only=flaky$"))
    expect(page.locator(".filtered-by")).to_contain_text("only failures")

    page.go_back()
    expect(page).to_have_url(re.compile(r"\?only=flaky$"))
    expect(flaky).to_be_checked()
    expect(failures).not_to_be_checked()
    expect(page.locator("#matrix tbody tr")).to_have_count(1)
    page.go_back()
    expect(page).to_have_url(re.compile(f"{ITERATION}$"))
    expect(flaky).not_to_be_checked()
    expect(page.locator(".filtered-by")).to_have_count(0)
    page.go_forward()
    expect(flaky).to_be_checked()


def test_a_tag_in_the_address_has_its_control_and_says_what_it_filters(page: Page) -> None:
    page.goto(f"{ITERATION}?tag=nightly")
    expect(page.get_by_label("Tag")).to_have_value("nightly")
    expect(page.locator(".filtered-by")).to_contain_text("tag nightly")
    page.locator(".filtered-by").get_by_role("link", name="Show every eval").click()
    expect(page).to_have_url(re.compile(f"{ITERATION}$"))
    # The form is part of the swapped matrix: no eval here has a tag, so no Tag control.
    expect(page.get_by_label("Tag")).to_have_count(0)


def test_one_condition_has_one_colour_on_two_skills(page: Page) -> None:
    colours = {}
    for skill in (SKILL, OTHER_SKILL):
        page.goto(skill)
        expect(page.locator('[data-chart="chart-score"]')).to_have_attribute(
            "data-chart-rendered", ""
        )
        colours[skill] = page.evaluate(
            """() => Object.fromEntries(document.querySelector('[data-chart="chart-score"]').data
                .filter(t => t.mode === "lines+markers").map(t => [t.name, t.line.color]))"""
        )
        swatch = page.locator("td .swatch + .cond", has_text=re.compile("^with_skill$")).first
        colours[skill]["swatch"] = swatch.evaluate(
            "e => getComputedStyle(e.previousElementSibling).getPropertyValue('--c').trim()"
        )
    first, second = colours[SKILL], colours[OTHER_SKILL]
    assert first["with_skill"] == second["with_skill"] == first["swatch"] == second["swatch"]
    assert first["without_skill"] == second["without_skill"] != first["with_skill"]


def test_error_pages_are_styled_and_offer_no_page_actions(page: Page) -> None:
    response = page.goto("/skills/no-such-skill/")
    assert response is not None and response.status == 404
    expect(page.locator("header.site .brand")).to_be_visible()
    expect(page.locator("h1")).to_have_text("Not found")
    expect(page.locator("summary", has_text="Share")).to_have_count(0)
    expect(page.locator("[data-copy-link]")).to_have_count(0)
