"""Searching in Chromium: a phrase from a final message, found and followed to its run; the
runs of one eval grouped, on a phone."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser import CHROMIUM
from tests.browser.pages import PAGE_SHOTS, WIDTHS, log_in, new_context, sideways

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(
    not CHROMIUM.is_file(),
    reason=f"no Chromium at {CHROMIUM} (install Debian's chromium or set EVALSITE_CHROMIUM)",
)

Screenshot = Callable[[str], Path]
PHRASE = "the title carried the machine's local date"


def test_a_phrase_from_a_final_message_leads_to_its_run(page: Page, screenshot: Screenshot) -> None:
    page.goto("/skills/taming-flaky-tests/search/")
    page.evaluate("window.evalsiteSameDocument = true")

    page.get_by_label("Search").fill(f'"{PHRASE}"')
    page.get_by_role("button", name="Search").click()

    hits = page.locator("ol.search-hits li.hit")
    expect(hits.first.locator("mark").first).to_be_visible()
    assert page.evaluate("window.evalsiteSameDocument === true"), "the results reloaded the page"
    assert parse_qs(urlsplit(page.url).query)["q"] == [f'"{PHRASE}"']  # shareable
    expect(hits.first).to_contain_text("timezone-boundary-flake")
    screenshot("results")

    # Both runs of iteration 4 ended with that sentence: one result, its runs folded under it.
    expect(hits.first.locator(".hit-tally")).to_contain_text("2 runs")
    hits.first.locator("details.hit-runs summary").click()
    hits.first.locator("a.run-link").first.click()

    expect(page).to_have_url(re.compile(r"/evals/timezone-boundary-flake/\w+/1/#final-\d+$"))
    expect(page.locator("details.final[open]").first).to_contain_text("local date")
    screenshot("run")


def test_filters_apply_in_place_and_a_bad_query_says_why(page: Page) -> None:
    page.goto("/skills/taming-flaky-tests/search/?q=timezone")
    before = page.locator("ol.search-hits li.hit").count()

    page.locator('select[name="condition"]').select_option("without_skill")

    expect(page).to_have_url(re.compile(r"condition=without_skill"))
    expect(page.locator("ol.search-hits li.hit").first).to_contain_text("without_skill")
    assert page.locator("ol.search-hits li.hit").count() < before

    page.goto('/search/?q="*"')
    expect(page.locator(".search-error")).to_contain_text("has no word to search for")


def test_grouped_results_fit_a_phone_and_unfold_their_runs(
    browser: Browser, live_server, sample: None, screenshot: Screenshot
) -> None:
    phone = new_context(browser, live_server, WIDTHS["phone"]).new_page()
    log_in(phone)
    phone.goto("/skills/taming-flaky-tests/search/?q=flaky")

    group = phone.locator("ol.search-hits li.hit-group", has_text="order-dependent-cache").first
    expect(group.locator(".hit-tally")).to_have_text(re.compile(r"^6 runs: 4 passed · 2 failed$"))
    runs = group.locator("details.hit-runs li")
    expect(runs.first).not_to_be_visible()
    group.locator("details.hit-runs summary").click()
    expect(runs).to_have_count(6)
    expect(runs.filter(has_text="✗ failed")).to_have_count(2)
    assert sideways(phone) <= 0
    phone.screenshot(path=PAGE_SHOTS / "search-grouped-open-375.png", full_page=True)

    group.locator(".eval-link").click()
    expect(phone).to_have_url(re.compile(r"/iterations/4/evals/order-dependent-cache/$"))
    phone.context.close()
