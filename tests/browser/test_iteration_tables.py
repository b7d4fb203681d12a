"""The iteration matrix in Chromium: sorting, filtering and paging by clicking, a cell's runs
reached by keyboard, the same links without JavaScript, and no sideways scroll on a phone."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from runs.importing import import_workspace
from tests.browser import CHROMIUM
from tests.factories import eval_magic_iteration

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(
    not CHROMIUM.is_file(),
    reason=f"no Chromium at {CHROMIUM} (install Debian's chromium or set EVALSITE_CHROMIUM)",
)

EVALS = 45
ITERATION_2 = "/skills/tables/iterations/2/"


@pytest.fixture
def tables(tmp_path: Path, sample: None) -> str:
    """Two iterations of 45 evals (ids 0…44), one run each: in #2, 7 evals improved (the odd
    multiples of 3, whose "b" now passes with the skill) and the other 38 did not move."""
    for n in (1, 2):
        cells = {}
        for i in range(EVALS):
            better = n == 2 and i % 3 == 0
            cells[(str(i), "with_skill")] = [{"a": True, "b": better or i % 2 == 0}]
            cells[(str(i), "without_skill")] = [{"a": i % 4 == 0, "b": False}]
        folder = tmp_path / f"ws{n}"
        eval_magic_iteration(
            folder,
            skill="tables",
            label=f"iteration-{n}",
            timestamp=f"2026-05-0{n}T10:00:00Z",
            cells=cells,
        )
        import_workspace([folder])
    return ITERATION_2


def eval_ids(page: Page) -> Locator:
    return page.locator("#matrix tbody tr td:first-child > a:first-child")


def mark_document(page: Page) -> None:
    page.evaluate("window.evalsiteSameDocument = true")


def is_same_document(page: Page) -> bool:
    return page.evaluate("window.evalsiteSameDocument === true")


def test_sorting_filtering_and_paging_by_clicking(page: Page, tables: str) -> None:
    page.goto(tables)
    expect(eval_ids(page)).to_have_count(40)
    expect(eval_ids(page).nth(10)).to_have_text("10")  # natural order: 9, 10, not 1, 10, 100
    mark_document(page)

    page.locator("#matrix thead").get_by_role("link", name=re.compile(r"^Eval")).click()
    expect(page).to_have_url(re.compile(r"\?sort=-eval$"))
    expect(eval_ids(page).first).to_have_text("44")

    page.locator("#matrix thead").get_by_role("link", name=re.compile(r"^Δ")).click()
    expect(page).to_have_url(re.compile(r"\?sort=-delta$"))
    expect(page.locator("#matrix thead")).to_contain_text("Δ (T − C) ▼")

    improved = page.locator(".movements").get_by_role("link", name=re.compile("improved"))
    expect(improved).to_have_text("▲ improved 7")
    expect(page.locator(".movements")).to_contain_text("= unchanged 38")
    improved.click()
    expect(page).to_have_url(re.compile(r"\?sort=-delta&change=improved$"))
    expect(eval_ids(page)).to_have_text(["3", "9", "15", "21", "27", "33", "39"])
    expect(page.locator(".filtered-by")).to_contain_text("improved since #1")
    expect(page.locator("#matrix tbody tr .move.improved")).to_have_count(7)

    # "only failures" keeps the sort and the movement, from the address.
    page.get_by_label("only failures").check()
    expect(page).to_have_url(re.compile(r"only=failures"))
    expect(page).to_have_url(re.compile(r"change=improved"))
    expect(page).to_have_url(re.compile(r"sort=-delta"))

    page.locator(".movements").get_by_role("link", name="any", exact=True).click()
    expect(page).not_to_have_url(re.compile(r"change="))
    page.get_by_label("only failures").uncheck()
    expect(page).not_to_have_url(re.compile(r"change=|only="))
    page.get_by_role("link", name="Next ›").click()
    expect(page).to_have_url(re.compile(r"page=2"))
    expect(eval_ids(page)).to_have_count(EVALS - 40)
    assert is_same_document(page), "a control reloaded the page instead of swapping #matrix"

    page.reload()
    expect(eval_ids(page)).to_have_count(EVALS - 40)
    expect(page.locator("#matrix thead")).to_contain_text("Δ (T − C) ▼")


def test_a_cell_reached_by_keyboard_opens_its_runs(page: Page, tables: str) -> None:
    page.goto(tables)
    mark_document(page)
    eval_ids(page).nth(2).focus()  # the eval "2" in the row's first column
    page.keyboard.press("Tab")
    expect(page.locator("#matrix tbody tr").nth(2).locator("a.history-link")).to_be_focused()
    page.keyboard.press("Tab")
    cell = page.locator("#matrix tbody tr").nth(2).locator("a.cell-link").first
    expect(cell).to_be_focused()

    page.keyboard.press("Enter")

    drill = page.locator("tr.drilldown")
    expect(drill).to_have_count(1)
    expect(drill).to_contain_text("2 · with_skill: 1 run")
    expect(page).to_have_url(re.compile(f"{tables}$"))  # a row put in place, no new address
    assert is_same_document(page)
    page.keyboard.press("Enter")  # once: a second press adds no second copy, nor leaves
    expect(drill).to_have_count(1)
    assert is_same_document(page)


def test_without_javascript_the_links_are_pages(
    browser: Browser, live_server, page: Page, tables: str
) -> None:
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    context.add_cookies(page.context.cookies())  # the logged-in session of `page`
    plain = context.new_page()
    plain.goto(tables)

    plain.locator("#matrix tbody tr").nth(3).locator("a.cell-link").first.click()
    expect(plain).to_have_url(re.compile(f"{tables}cells/3/with_skill/$"))
    expect(plain.locator("h1")).to_contain_text("with_skill")
    expect(plain.locator("article.run")).to_have_count(1)

    plain.goto(tables)
    plain.locator("#matrix thead").get_by_role("link", name=re.compile(r"^Δ")).click()
    expect(plain).to_have_url(re.compile(r"\?sort=-delta$"))
    plain.locator(".movements").get_by_role("link", name=re.compile("improved")).click()
    expect(plain).to_have_url(re.compile(r"\?sort=-delta&change=improved$"))
    expect(eval_ids(plain)).to_have_count(7)
    context.close()


def test_no_sideways_scroll_on_a_phone(page: Page, tables: str) -> None:
    page.set_viewport_size({"width": 375, "height": 800})
    sideways = "document.documentElement.scrollWidth - window.innerWidth"
    for address in (tables, f"{tables}?sort=-delta&change=improved", f"{tables}flaky/"):
        page.goto(address)
        assert page.evaluate(sideways) <= 0, address
    page.goto(tables)
    page.locator("#matrix tbody tr").first.locator("a.cell-link").first.click()
    expect(page.locator("tr.drilldown")).to_have_count(1)
    assert page.evaluate(sideways) <= 0, "with a cell's runs open"
    page.goto("/skills/tables/?sort=-delta")
    assert page.evaluate(sideways) <= 0, "the skill page"
