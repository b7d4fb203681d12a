"""Comparing three iterations in Chromium: ticked on the skill page's iteration table,
"Compare selected" opens them side by side (two open the two-iteration page), and the
side-by-side table sorts in place with its state in the address."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.browser import CHROMIUM
from tests.browser.pages import SKILL

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(
    not CHROMIUM.is_file(),
    reason=f"no Chromium at {CHROMIUM} (install Debian's chromium or set EVALSITE_CHROMIUM)",
)

Screenshot = Callable[[str], Path]


def tick(page: Page, *numbers: int) -> None:
    for number in numbers:
        page.get_by_role("checkbox", name=f"compare #{number}").check()


def test_three_ticked_on_the_skill_page_open_side_by_side(
    page: Page, screenshot: Screenshot
) -> None:
    page.goto(SKILL)
    tick(page, 3, 1, 2)
    page.get_by_role("button", name="Compare selected").click()

    page.wait_for_url(re.compile(r"/compare/\?iterations=1,2,3$"))
    table = page.locator("#many-table table.compare")
    headers = table.locator("thead th")
    expect(headers).to_have_count(5)  # eval, #1, #2, #3, change
    expect(headers.nth(1)).to_contain_text("#1")
    expect(headers.nth(3)).to_contain_text("#3")
    expect(page.locator("section.neighbour")).to_have_count(2)
    screenshot("side-by-side")

    page.evaluate("window.evalsiteSameDocument = true")
    table.locator("thead").get_by_role("link", name="Change", exact=True).click()
    page.wait_for_url(
        re.compile(r"iterations=1%2C2%2C3&sort=-change|iterations=1,2,3&sort=-change")
    )
    # Sorted in place by htmx: the same document, not a new page.
    assert page.evaluate("window.evalsiteSameDocument") is True


def test_two_ticked_open_the_two_iteration_page(page: Page) -> None:
    page.goto(SKILL)
    tick(page, 1, 3)
    page.get_by_role("button", name="Compare selected").click()

    page.wait_for_url(re.compile(r"/compare/\?a=1&b=3$"))
    expect(page.locator("#delta-change")).to_be_visible()
