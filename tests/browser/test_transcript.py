"""Digging into runs in Chromium: evidence to its event, a cell in place, two runs diffed,
and agents' hostile Markdown through every one of these views without a script running."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from runs.importing import import_workspace
from tests.browser import CHROMIUM
from tests.hostile import hostile_workspace

if TYPE_CHECKING:
    from playwright.sync_api import Page, Request

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(
    not CHROMIUM.is_file(),
    reason=f"no Chromium at {CHROMIUM} (install Debian's chromium or set EVALSITE_CHROMIUM)",
)

Screenshot = Callable[[str], Path]
ITERATION_3 = "/skills/taming-flaky-tests/iterations/3/"
TIMEZONE_EVAL = f"{ITERATION_3}evals/timezone-boundary-flake/"
TIMEZONE_RUN = f"{TIMEZONE_EVAL}with_skill/1/"
HOSTILE = "/skills/hostile-skill/iterations/1/"


def test_an_evidence_link_lands_on_its_event_opened(page: Page, screenshot: Screenshot) -> None:
    page.goto(TIMEZONE_RUN)
    evidence = page.locator("li.result", has_text="reproduces_before_editing").locator(".evidence")

    evidence.get_by_role("link", name="5", exact=True).click()

    expect(page).to_have_url(re.compile(r"/with_skill/1/#event-5$"))
    event = page.locator("#event-5")
    expect(event).to_contain_text("Bash")
    expect(event.locator("details")).to_have_attribute("open", "")  # static/js/transcript.js
    assert page.evaluate("document.querySelector(':target').id") == "event-5"
    screenshot("event-5")


def test_markdown_renders_and_the_raw_toggle_shows_the_text_as_written(page: Page) -> None:
    page.goto(TIMEZONE_RUN)
    final = page.locator("#run-with_skill-1 details.final .md-block")
    expect(final.locator(".md code").first).to_be_visible()  # `report_title` as code

    final.locator("summary", has_text="raw").click()

    expect(final.locator(".md")).to_be_hidden()
    expect(final.locator("details.md-source pre")).to_contain_text("`report_title`")


def test_a_matrix_cell_opens_its_runs_in_place(page: Page, screenshot: Screenshot) -> None:
    page.goto(ITERATION_3)
    page.evaluate("window.evalsiteSameDocument = true")
    row = page.locator("#matrix tbody tr", has_text="timezone-boundary-flake").first

    row.locator("td.cell a.cell-link").first.click()

    drill = page.locator("tr.drilldown")
    expect(drill).to_have_count(1)
    expect(drill.locator("article.run").first).to_contain_text("PASS")
    expect(drill.locator("details.final").first).to_be_visible()
    expect(page).to_have_url(re.compile(f"{ITERATION_3}$"))
    assert page.evaluate("window.evalsiteSameDocument === true")
    screenshot("cell")


def test_two_runs_side_by_side(page: Page, screenshot: Screenshot) -> None:
    page.goto(TIMEZONE_EVAL)
    form = page.locator("form.run-diff")
    form.locator('select[name="a"]').select_option("with_skill/1")
    form.locator('select[name="b"]').select_option("without_skill/1")

    form.get_by_role("button").click()

    page.wait_for_url(re.compile(r"/diff/\?a=with_skill%2F1&b=without_skill%2F1"))
    final = page.locator("table.side-by-side").first
    expect(final.locator("tr.replace, tr.insert, tr.delete").first).to_be_visible()
    expect(page.locator("h2#diff-patch")).to_be_visible()
    screenshot("diff")


def test_hostile_markdown_runs_no_script_in_any_new_view(
    page: Page, dialogs: list[str], tmp_path: Path, screenshot: Screenshot
) -> None:
    import_workspace([hostile_workspace(tmp_path)])
    foreign: list[str] = []

    def outside(request: Request) -> None:
        if not request.url.startswith(page.url.split("/skills")[0].split("/search")[0]):
            foreign.append(request.url)

    page.on("request", outside)
    views = [
        f"{HOSTILE}evals/alpha/with_skill/1/",
        f"{HOSTILE}evals/alpha/",
        f"{HOSTILE}cells/alpha/with_skill/",
        f"{HOSTILE}evals/alpha/diff/?a=with_skill/1&b=without_skill/1",
        "/search/?q=unique+hostile+marker",
        "/skills/hostile-skill/search/?q=%22raw+HTML+block%22",
    ]
    for view in views:
        page.goto(view)
        if "search" in view:
            expect(page.locator("ol.search-hits mark").first).to_be_visible()
        else:
            expect(page.locator("main")).to_contain_text("unique-hostile-marker")
        toggles = page.locator("details.md-source > summary").all()
        for toggle in [t for t in toggles if t.is_visible()][:3]:  # (some sit in closed sections)
            toggle.click()
        assert page.locator('main a[href^="javascript"], main img, main iframe').count() == 0

    page.goto(f"{HOSTILE}evals/alpha/")
    page.get_by_role("link", name=re.compile("^Show conversation")).first.click()
    expect(page.locator("ol.conversation li.event")).to_have_count(3)
    page.goto(ITERATION_3.replace("taming-flaky-tests", "hostile-skill").replace("/3/", "/1/"))
    page.locator("#matrix td.cell a.cell-link").first.click()
    expect(page.locator("tr.drilldown")).to_contain_text("unique-hostile-marker")
    page.wait_for_timeout(300)  # an onerror or onload would have fired by now

    assert dialogs == []
    assert foreign == []  # no image, script or frame fetched from anywhere else
    screenshot("hostile")
