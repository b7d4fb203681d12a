"""The trigger pages in Chromium: the panel and its chart, a query's runs, a phone's width."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from tests.browser import CHROMIUM
from tests.browser.conftest import PASSWORD, USERNAME, XSS

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no Chromium at {CHROMIUM}")

SKILL = "/skills/changelog/"
TRIGGER_2 = f"{SKILL}triggers/2/"
COMPARE = f"{SKILL}triggers/compare/?a=1&b=2"


def test_the_skill_page_draws_the_triggering_chart(
    page: Page, triggers: None, js_errors: list[str], dialogs: list[str], screenshot: Callable
) -> None:
    page.goto(SKILL)
    panel = page.locator("#triggering")
    expect(panel.get_by_role("heading", name="Triggering")).to_be_visible()
    chart = panel.locator('[data-chart="chart-triggers"]')
    expect(chart).to_have_class(re.compile(r"\bjs-plotly-plot\b"))
    expect(chart.locator("svg.main-svg").first).to_be_visible()
    expect(chart.locator("g.trace").first).to_be_attached()
    # Drawn: the numbers fold away under the chart; the versions table stays.
    expect(panel.locator("details.chart-data")).not_to_have_attribute("open", "")
    expect(panel.locator("table.trigger-versions tbody tr")).to_have_count(2)
    expect(panel.locator("table.trigger-versions ins").first).to_contain_text(XSS)
    screenshot("panel")
    assert js_errors == [] and dialogs == []


def test_a_query_s_runs_open_from_its_details(
    page: Page, triggers: None, dialogs: list[str]
) -> None:
    page.goto(TRIGGER_2)
    row = page.locator("table.trigger-queries tbody tr", has_text=XSS)
    details = row.locator("details")
    expect(details).not_to_have_attribute("open", "")
    details.locator("summary").click()
    expect(details).to_have_attribute("open", "")
    expect(details.locator("ol.trigger-runs > li")).to_have_count(3)
    expect(details).to_contain_text(f"Run 2 says {XSS}")
    expect(details).to_contain_text("loaded no skill")
    assert dialogs == []


def test_the_trigger_pages_fit_a_phone(browser: Browser, live_server, triggers: None) -> None:
    context = browser.new_context(base_url=live_server.url, viewport={"width": 375, "height": 800})
    page = context.new_page()
    try:
        page.goto("/accounts/login/")
        page.fill("#id_username", USERNAME)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(re.compile(r".*/$"))
        too_wide = {}
        for address in (SKILL, TRIGGER_2, COMPARE):
            page.goto(address)
            page.wait_for_load_state("networkidle")
            # Open every query's runs too: what unfolds must stay inside its box.
            for summary in page.locator("td.query-runs summary").all():
                summary.click()
            extra = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            if extra > 0:
                too_wide[address] = extra
        assert too_wide == {}, f"pages wider than 375 px (by px): {too_wide}"
    finally:
        context.close()
