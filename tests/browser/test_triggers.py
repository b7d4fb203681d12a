"""The trigger pages in Chromium: the panel and its chart, a query's runs, a phone's width."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from runs.importing import import_workspace
from runs.models import TriggerQuery, TriggerRun
from tests.browser import CHROMIUM
from tests.browser.conftest import PASSWORD, USERNAME
from tests.factories import trigger_result, write_json

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no Chromium at {CHROMIUM}")

SKILL = "/skills/changelog/"
TRIGGER_2 = f"{SKILL}triggers/2/"
COMPARE = f"{SKILL}triggers/compare/?a=1&b=2"
XSS = "<img src=x onerror=alert(1)>"
#: No spaces to break at: a page that cannot wrap it must scroll it inside its own box.
LONG = "release-notes-" * 12


@pytest.fixture
def triggers(sample: None, tmp_path: Path) -> None:
    """Two descriptions of the changelog skill; the second's hostile query has three runs."""
    folder = tmp_path / "changelog"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: changelog\ndescription: Old.\n---\n")
    before = [(LONG, True, 1), (XSS, True, 0), ("weather", False, 2)]
    after = [(LONG, True, 3), (XSS, True, 2), ("weather", False, 0)]
    write_json(
        folder / "evals" / "a-trigger-results.json", trigger_result("Use for changelogs.", before)
    )
    write_json(
        folder / "evals" / "b-trigger-results.json",
        trigger_result(f"Use for changelogs and {LONG} {XSS}", after),
    )
    import_workspace([tmp_path])
    query = TriggerQuery.objects.get(iteration__number=2, query=XSS)
    for index, outcome in enumerate(("loaded", "none", "loaded"), start=1):
        TriggerRun.objects.create(
            query=query,
            run_index=index,
            outcome=outcome,
            loaded_skill="changelog" if outcome == "loaded" else "",
            tool_calls=[{"name": "Skill", "input": {"skill": "changelog"}}],
            final_message=f"Run {index} says {XSS}",
        )


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
