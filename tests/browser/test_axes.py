"""The axes page in Chromium: the matrix and the trend per harness × model readable at a
laptop's and a phone's width, without sideways scrolling, hostile names shown as typed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from runs.importing import import_workspace
from tests.browser import CHROMIUM
from tests.runs.test_axes import HOSTILE_HARNESS, HOSTILE_MODEL, iteration

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no Chromium at {CHROMIUM}")

PATH = "/skills/demo-skill/axes/"


@pytest.fixture
def combinations(sample: None, tmp_path: Path) -> None:
    """Three harnesses × three models (one a hostile name), a few iterations each."""
    specs = [
        (harness, model, effect)
        for harness, effect in (
            ("claude-code", "helps"),
            ("codex", "hurts"),
            (HOSTILE_HARNESS, "noise"),
        )
        for model in ("claude-sonnet-4-6", "claude-haiku-4-5", HOSTILE_MODEL)
    ]
    specs += [("claude-code", "claude-sonnet-4-6", "noise"), ("codex", "claude-haiku-4-5", "helps")]
    folders = [
        iteration(tmp_path, n, harness=h, model=m, effect=e)
        for n, (h, m, e) in enumerate(specs, start=1)
    ]
    import_workspace(folders)


@pytest.mark.parametrize("width", [1366, 375])
def test_the_matrix_and_trend_read_at_a_laptops_and_a_phones_width(
    page: Page,
    combinations: None,
    width: int,
    screenshot: Callable[[str], Path],
    js_errors: list[str],
    dialogs: list[str],
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(PATH)

    expect(page.locator("[data-chart='chart-axes'] .main-svg").first).to_be_visible()
    page.wait_for_function(
        "() => { const e = document.querySelector('[data-chart=chart-axes]');"
        " return e._fullLayout && e._fullLayout._size.h >= 195; }"
    )
    matrix = page.locator("table.axes-matrix")
    expect(matrix.locator("thead th")).to_have_count(4)
    expect(matrix.locator("tbody th", has_text=HOSTILE_HARNESS)).to_have_count(1)
    expect(matrix.locator("thead th", has_text=HOSTILE_MODEL)).to_have_count(1)
    expect(page.locator("#sign-flip p")).to_contain_text("but significantly hurts on codex")
    legend = page.locator("[data-chart='chart-axes'] .legendtext")
    expect(legend).to_have_count(9)
    expect(legend.filter(has_text=HOSTILE_HARNESS).first).to_be_visible()
    # The axis title sits inside the chart, not clipped.
    svg = page.locator("[data-chart='chart-axes'] .main-svg").first.bounding_box()
    title = page.locator("[data-chart='chart-axes'] .g-ytitle text").bounding_box()
    assert svg and title and title["x"] >= svg["x"] - 0.5
    assert title["x"] + title["width"] <= svg["x"] + svg["width"] + 0.5
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(f"{width}")
    assert js_errors == [] and dialogs == []


def test_the_page_reads_without_javascript(browser, live_server, combinations: None) -> None:
    from tests.browser.conftest import PASSWORD, USERNAME

    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    tab = context.new_page()
    tab.goto("/accounts/login/")
    tab.fill("#id_username", USERNAME)
    tab.fill("#id_password", PASSWORD)
    tab.click("button[type=submit]")
    tab.goto(PATH)

    expect(tab.locator("table.axes-matrix tbody tr")).to_have_count(3)
    expect(tab.locator("details.chart-data tbody tr")).to_have_count(11)
    context.close()
