"""Searching in Chromium: a phrase from a final message, found and followed to its run."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser import CHROMIUM

if TYPE_CHECKING:
    from playwright.sync_api import Page

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

    hits.first.locator("a.hit-link").click()

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
