"""A skill whose name needs percent-encoding, shared and read in Chromium (issue #10 §1)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

from runs.importing import import_workspace
from tests.browser import CHROMIUM
from tests.factories import eval_magic_iteration

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no Chromium at {CHROMIUM}")

SKILL = "café-helper"
#: A condition whose name is no CSS selector: "Show conversation" once targeted its id.
CONDITION = "mit skill: ü"


@pytest.fixture
def cafe_helper(sample: None, tmp_path: Path) -> None:
    eval_magic_iteration(
        tmp_path,
        skill=SKILL,
        cells={("eval 1", CONDITION): [{"a1": True}], ("eval 1", "without_skill"): [None]},
        conditions=[CONDITION, "without_skill"],
    )
    import_workspace([tmp_path])


def test_the_share_button_shares_a_skill_whose_name_is_not_ascii(
    page: Page, browser: Browser, live_server, cafe_helper: None, js_errors: list[str]
) -> None:
    address = f"/skills/{quote(SKILL)}/"
    page.goto(address)
    page.locator("summary", has_text="Share").click()
    page.get_by_role("button", name="Create link").click()
    expect(page.locator("h1")).not_to_have_text("Cannot share this page")
    link = page.locator("pre[data-secret]").inner_text().strip()

    outsider = browser.new_context(base_url=live_server.url).new_page()
    try:
        outsider.goto(link)
        expect(outsider).to_have_url(re.compile(re.escape(address) + "$"))
        expect(outsider.locator("h1")).to_have_text(SKILL)
        expect(outsider.locator("header.site")).to_contain_text("shared view")
    finally:
        outsider.context.close()
    assert not js_errors


def test_show_conversation_works_under_a_condition_name_with_spaces(
    page: Page, cafe_helper: None, js_errors: list[str]
) -> None:
    page.goto(f"/skills/{quote(SKILL)}/iterations/1/evals/{quote('eval 1')}/")
    card = page.locator("article.run").filter(has_text=f"{CONDITION} · run 1")
    card.get_by_role("link", name=re.compile("^Show conversation")).click()

    expect(card.locator(".conversation-slot ol.conversation > li.event").first).to_be_visible()
    assert not js_errors
