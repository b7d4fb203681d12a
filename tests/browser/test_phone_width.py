"""No page scrolls sideways at 375 px: every kind of page the site has (tests/browser/pages.py),
logged in, without an account, and through a share link; and the list misses no named URL."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.urls import resolve

from accounts.sharing import share_view
from tests.browser import CHROMIUM
from tests.browser.conftest import USERNAME
from tests.browser.pages import (
    ANONYMOUS_PAGES,
    DOCS_PAGES,
    DOCS_SHOTS,
    NOT_PAGE_NAMESPACES,
    NOT_PAGES,
    PAGE_SHOTS,
    PAGES,
    SHARED_PAGES,
    WIDTHS,
    log_in,
    new_context,
    settle,
    sideways,
    url_names,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no Chromium at {CHROMIUM}")

PHONE = WIDTHS["phone"]
#: The pages that are the site's "not found" answers.
NOT_FOUND = {"not-found", "share-link-invalid"}


def test_every_named_url_is_a_listed_page_or_says_why_it_is_not() -> None:
    addresses = [*PAGES.values(), *ANONYMOUS_PAGES.values()]
    listed = {resolve(urlsplit(a.format(campaign=1)).path).view_name for a in addresses}
    names = {name for name in url_names() if name.split(":")[0] not in NOT_PAGE_NAMESPACES}

    unlisted = names - listed - set(NOT_PAGES)
    assert unlisted == set(), f"add an address of each to tests/browser/pages.py: {unlisted}"
    assert set(NOT_PAGES) <= names, f"no such URL: {set(NOT_PAGES) - names}"
    assert not set(NOT_PAGES) & listed
    assert set(SHARED_PAGES) <= set(PAGES) and set(DOCS_PAGES) <= set(PAGES)


def visit(page: Page, name: str, address: str, too_wide: dict[str, int]) -> None:
    """Open the page, note how far it is wider than the phone, photograph it."""
    response = page.goto(address)
    assert response is not None
    assert response.status == (404 if name in NOT_FOUND else 200), f"{name}: {address}"
    settle(page)
    if (extra := sideways(page)) > 0:
        too_wide[name] = extra
    page.evaluate("window.scrollTo(0, 0)")
    if name in DOCS_PAGES:  # first: a full-page shot resizes the window, redrawing charts
        page.screenshot(path=DOCS_SHOTS / f"{name}-{PHONE}.png")
    page.screenshot(path=PAGE_SHOTS / f"{name}-{PHONE}.png", full_page=True)


def test_no_page_scrolls_sideways_at_375_px(
    browser: Browser, live_server, triggers: None, campaign: int
) -> None:
    PAGE_SHOTS.mkdir(parents=True, exist_ok=True)
    DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
    too_wide: dict[str, int] = {}

    member = new_context(browser, live_server, PHONE).new_page()
    log_in(member)
    for name, address in PAGES.items():
        visit(member, name, address.format(campaign=campaign), too_wide)
    member.context.close()

    stranger = new_context(browser, live_server, PHONE).new_page()
    for name, address in ANONYMOUS_PAGES.items():
        visit(stranger, name, address, too_wide)
    stranger.context.close()

    # A shared view has its own header ("shared view", Copy link) and none of the forms.
    creator = get_user_model().objects.get(username=USERNAME)
    secrets = {
        skill: share_view(creator=creator, address=f"/skills/{skill}/").secret
        for skill in {urlsplit(PAGES[name]).path.split("/")[2] for name in SHARED_PAGES}
    }
    for name in SHARED_PAGES:
        outsider = new_context(browser, live_server, PHONE).new_page()
        skill = urlsplit(PAGES[name]).path.split("/")[2]
        visit(outsider, f"shared-{name}", f"/s/{secrets[skill]}/?to={quote(PAGES[name])}", too_wide)
        assert urlsplit(outsider.url).path == urlsplit(PAGES[name]).path, name
        expect(outsider.locator("header.site")).to_contain_text("shared view")
        outsider.context.close()

    assert too_wide == {}, f"pages wider than {PHONE} px (by px): {too_wide}"
