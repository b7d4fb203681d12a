"""An eval's history in a real browser: reached from the eval page, its links, 375 px."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page

SKILL = "taming-flaky-tests"
EVAL = "timezone-boundary-flake"
HISTORY = f"/skills/{SKILL}/evals/{EVAL}/"


def test_the_eval_page_leads_to_the_history_and_back(
    page: Page, js_errors: list[str], screenshot: Callable[[str], Path]
) -> None:
    from playwright.sync_api import expect

    page.goto(f"/skills/{SKILL}/iterations/3/evals/{EVAL}/")
    page.get_by_role("link", name="History of this eval across every iteration").click()

    expect(page).to_have_url(re.compile(re.escape(HISTORY) + "$"))
    expect(page.locator("h1")).to_contain_text("history")
    scores = page.locator("table.history")
    expect(scores.locator("tbody tr").first).to_be_visible()
    screenshot("history")
    # Every row that ran the eval links to that iteration's eval page; one opens it.
    links = scores.locator(f'tbody th a[href*="/evals/{EVAL}/"]')
    assert links.count() >= 2
    links.last.click()
    expect(page).to_have_url(re.compile(rf"/iterations/\d+/evals/{re.escape(EVAL)}/$"))
    expect(page.locator(".eval-summary")).to_be_visible()
    assert js_errors == []


def test_a_diff_link_of_the_history_opens_two_runs_side_by_side(page: Page) -> None:
    from playwright.sync_api import expect

    page.goto(HISTORY)
    diff = page.locator("table.history a[href*='/diff/?']").first
    diff.click()

    expect(page).to_have_url(re.compile(r"/diff/\?a="))
    expect(page.locator("h1")).to_be_visible()
    assert "no eval" not in page.content()


def test_the_history_and_the_eval_page_do_not_scroll_sideways_at_375_px(
    page: Page, screenshot: Callable[[str], Path]
) -> None:
    page.set_viewport_size({"width": 375, "height": 800})
    too_wide = {}
    for label, url in (
        ("history", HISTORY),
        ("eval", f"/skills/{SKILL}/iterations/3/evals/{EVAL}/"),
    ):
        page.goto(url)
        screenshot(label)
        extra = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        if extra > 0:
            too_wide[url] = extra
    assert too_wide == {}, f"pages wider than 375 px (by px): {too_wide}"
