"""A teammate shares a view with an outsider, and a reviewer overrides a judge, in Chromium."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.browser import CHROMIUM
from tests.browser.conftest import SCREENSHOTS

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no Chromium at {CHROMIUM}")

ITERATION_3 = "/skills/taming-flaky-tests/iterations/3/"
RUN = f"{ITERATION_3}evals/timezone-boundary-flake/with_skill/1/"


def test_an_outsider_opens_a_share_link_read_only(
    page: Page, browser: Browser, live_server, screenshot: Callable[[str], Path]
) -> None:
    page.goto(f"{ITERATION_3}?only=flaky")
    page.locator("summary", has_text="Share").click()
    page.get_by_role("button", name="Create link").click()
    link = page.locator("pre[data-secret]").inner_text().strip()
    screenshot("created")

    outsider = browser.new_context(base_url=live_server.url).new_page()
    try:
        outsider.goto(link)
        expect(outsider).to_have_url(re.compile(r"/iterations/3/\?only=flaky$"))
        expect(outsider.locator("header.site")).to_contain_text("shared view")
        expect(outsider.locator("form[method=post]")).to_have_count(0)
        outsider.screenshot(path=SCREENSHOTS / "outsider-shared-view.png", full_page=True)
        outsider.goto("/skills/changelog-from-commits/")
        expect(outsider).to_have_url(re.compile(r"/accounts/login/\?next="))
    finally:
        outsider.context.close()


def test_a_reviewer_overrides_a_result_and_the_page_says_so(
    page: Page, screenshot: Callable[[str], Path]
) -> None:
    page.goto(RUN)
    result = page.locator("li.result:not(.meta)").first
    before = result.locator(".verdict-mark").inner_text()
    result.locator("summary", has_text="Override").click()
    result.get_by_label("Why").fill("the judge missed the retry in the fixture")
    result.get_by_role("button", name="Record override").click()

    result = page.locator("li.result:not(.meta)").first
    expect(result.locator(".verdict-mark")).not_to_have_text(before)
    expect(result).to_contain_text(f"grader said {before}")
    expect(page.locator("section.reviews")).to_contain_text("the judge missed the retry")
    screenshot("overridden")
