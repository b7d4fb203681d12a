"""A shared address keeps showing the same iteration after older results are imported."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from runs.importing import import_workspace
from tests.browser import CHROMIUM
from tests.factories import eval_magic_iteration

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no Chromium at {CHROMIUM}")

SKILL = "taming-flaky-tests"
ITERATION_3 = f"/skills/{SKILL}/iterations/3/"


def test_a_share_link_shows_the_same_iteration_after_older_results_are_imported(
    page: Page,
    browser: Browser,
    live_server,
    tmp_path: Path,
    screenshot: Callable[[str], Path],
) -> None:
    page.goto(ITERATION_3)
    heading = page.locator("h1").inner_text()
    generated = page.locator("p.meta time").inner_text()
    assert "#3 iteration-3" in heading
    page.locator("summary", has_text="Share").click()
    page.get_by_role("button", name="Create link").click()
    link = page.locator("pre[data-secret]").inner_text().strip()

    # Another workspace's iteration-3, generated long before every sample iteration.
    import_workspace(
        [
            eval_magic_iteration(
                tmp_path / "older-ws",
                skill=SKILL,
                label="iteration-3",
                timestamp="2025-01-01T09:00:00Z",
            )
        ]
    )

    outsider = browser.new_context(base_url=live_server.url).new_page()
    try:
        outsider.goto(link)
        expect(outsider).to_have_url(re.compile(r"/iterations/3/$"))
        expect(outsider.locator("h1")).to_contain_text("#3 iteration-3 (skills-workspace)")
        expect(outsider.locator("p.meta time")).to_have_text(generated)
        outsider.screenshot(path=tmp_path / "shared.png", full_page=True)
    finally:
        outsider.context.close()

    page.goto(ITERATION_3)
    expect(page.locator("h1")).to_contain_text("#3 iteration-3 (skills-workspace)")
    page.goto(f"/skills/{SKILL}/")
    # The first column is the "Compare selected" tick box; the second names the iteration.
    rows = page.locator("#iteration-table tbody tr > td:nth-child(2) > a")
    expect(rows).to_have_count(5)
    # Newest first by generation time: the older results come last, under the next number.
    expect(rows.last).to_have_text("#5 iteration-3 (older-ws)")
    titles = rows.all_inner_texts()
    assert [title.split()[0] for title in titles] == ["#4", "#3", "#2", "#1", "#5"]
    screenshot("skill-after-older-import")
