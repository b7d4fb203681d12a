"""The compare page in Chromium: its table sorts and filters by clicking (in place, with the
state in the address), its rows open the run-vs-run diff, and it fits a 375 px screen."""

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

COMPARE = "/skills/taming-flaky-tests/compare/?a=1&b=3"
NATURAL = [
    "ci-only-timeout",
    "order-dependent-cache",
    "rename-test-helper",
    "rerun-budget-question",
    "timezone-boundary-flake",
]


def row_evals(page: Page) -> Locator:
    return page.locator("#compare-table table.compare tbody tr td:first-child > a:first-child")


def query_of(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def test_sorting_and_filtering_by_clicking_keeps_the_state_in_the_address(
    page: Page, screenshot: Screenshot
) -> None:
    page.goto(COMPARE)
    expect(row_evals(page)).to_have_text(NATURAL)
    page.evaluate("window.evalsiteSameDocument = true")

    page.locator("#compare-table table.compare thead").get_by_role(
        "link", name="Change", exact=True
    ).click()

    page.wait_for_url(re.compile(r"sort=-change"))
    # #1 → #3: +0.33, +0.33, +0.25, +0.11, 0.00; ties in natural order.
    expect(row_evals(page)).to_have_text(
        [
            "ci-only-timeout",
            "rename-test-helper",
            "timezone-boundary-flake",
            "order-dependent-cache",
            "rerun-budget-question",
        ]
    )
    assert page.evaluate("window.evalsiteSameDocument === true"), "htmx did not swap in place"
    expect(page.locator("#compare-table table.compare thead")).to_contain_text("Change ▼")

    page.locator(".direction-filter").get_by_role("link", name="= unchanged 1").click()

    page.wait_for_url(re.compile(r"show=unchanged"))
    assert query_of(page)["sort"] == ["-change"]  # the filter kept the sort
    expect(row_evals(page)).to_have_text(["rerun-budget-question"])
    expect(page.locator(".direction-filter a[aria-current]")).to_contain_text("unchanged")
    screenshot("unchanged")

    page.reload()  # the address alone reproduces the view
    expect(row_evals(page)).to_have_text(["rerun-budget-question"])


def test_a_row_and_a_flip_open_the_diff_of_their_runs(page: Page) -> None:
    page.goto(COMPARE)
    row = page.locator("#compare-table tbody tr", has_text="timezone-boundary-flake")

    row.get_by_role("link", name="diff").click()

    page.wait_for_url(re.compile(r"/iterations/1/evals/timezone-boundary-flake/diff/\?"))
    assert query_of(page) == {"a": ["with_skill/1"], "b": ["with_skill/1"], "ib": ["3"]}
    expect(page.locator("main")).to_contain_text("with_skill")

    page.goto(COMPARE)
    group = page.locator("details.flip-group", has_text="order-dependent-cache")
    expect(group.locator("summary")).to_contain_text("▼ 1 broke")
    broke = group.locator("tbody tr", has_text="names_shared_state")
    expect(broke).to_contain_text("▼ broke")  # a word and a mark, not colour alone

    broke.get_by_role("link", name="diff").click()

    page.wait_for_url(re.compile(r"/iterations/1/evals/order-dependent-cache/diff/\?"))
    # A run of #1 where the assertion passed against one of #3 where it failed.
    assert query_of(page) == {"a": ["with_skill/1"], "b": ["with_skill/2"], "ib": ["3"]}


def test_the_compare_page_fits_a_phone(page: Page, screenshot: Screenshot) -> None:
    page.set_viewport_size({"width": 375, "height": 800})
    for address in (COMPARE, "/skills/taming-flaky-tests/compare/?a=3&b=4"):
        page.goto(address)
        expect(row_evals(page).first).to_be_visible()
        wider = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert wider <= 0, f"{address} is {wider} px wider than the screen"
    screenshot("phone")
