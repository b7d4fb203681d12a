"""One address of every kind of page the site has, for the tests that visit them all.

PAGES is the one list: the phone-width test opens each at 375 px, the dashboard test
photographs each. A new named URL must be added here (or to NOT_PAGES, saying why), or
test_phone_width's coverage check fails. Addresses are in the data of the browser tests'
`sample` and `triggers` fixtures; `{campaign}` is filled in with the `campaign` fixture's id.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from django.urls import URLPattern, URLResolver, get_resolver

from tests.browser.conftest import PASSWORD, ROOT, USERNAME

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

SKILL = "/skills/taming-flaky-tests/"
OTHER_SKILL = "/skills/changelog-from-commits/"
TRIGGER_SKILL = "/skills/changelog/"
ITERATION = f"{SKILL}iterations/3/"
EVAL = f"{ITERATION}evals/timezone-boundary-flake/"

PAGE_SHOTS = ROOT / "test-output" / "browser" / "pages"
#: Window-sized shots of the pages the README shows (docs/ holds reduced copies of them).
DOCS_SHOTS = ROOT / "test-output" / "browser" / "docs"
WIDTHS = {"desktop": 1366, "phone": 375}

#: Logged-in pages, by the name their screenshots get.
PAGES: dict[str, str] = {
    "overview": "/",
    "skill": SKILL,
    "iteration": ITERATION,
    "assertions": f"{ITERATION}assertions/",
    "flaky": f"{ITERATION}flaky/",
    "cell": f"{ITERATION}cells/order-dependent-cache/with_skill/",
    "compare": f"{SKILL}compare/?a=2&b=3",
    "compare-many": f"{SKILL}compare/?iterations=1,2,3",
    "eval": EVAL,
    "eval-history": f"{SKILL}evals/timezone-boundary-flake/",
    "axes": f"{SKILL}axes/",
    "diff": f"{EVAL}diff/?a=with_skill/1&b=without_skill/1",
    "run": f"{EVAL}with_skill/1/",
    "skill-creator-eval": f"{OTHER_SKILL}iterations/2/evals/0/",
    "trigger": f"{TRIGGER_SKILL}triggers/2/",
    "trigger-compare": f"{TRIGGER_SKILL}triggers/compare/?a=1&b=2",
    # Grouped results (the runs of one eval whose snippets read the same) and single ones.
    "search": f"{SKILL}search/?q=flaky",
    "search-every-skill": "/search/?q=timezone",
    "review-queue": f"{SKILL}review/",
    "import": "/imports/",
    "campaign": "/campaigns/{campaign}/",
    "account": "/accounts/",
    "password-change": "/accounts/password/",
    "password-changed": "/accounts/password/done/",
    "not-found": "/skills/no-such-skill/",
}
#: Pages a visitor without an account sees.
ANONYMOUS_PAGES: dict[str, str] = {
    "login": "/accounts/login/",
    "share-link-invalid": "/s/not-a-share-link/",
}
#: Pages a share link of the skill SKILL (or TRIGGER_SKILL) opens, as its visitor sees them.
SHARED_PAGES = (
    "skill",
    "iteration",
    "compare",
    "compare-many",
    "eval",
    "eval-history",
    "axes",
    "diff",
    "run",
    "trigger",
)
#: The pages the README shows; docs/ holds reduced copies of their window-sized shots.
DOCS_PAGES = ("overview", "skill", "iteration", "compare", "eval", "eval-history")

#: Named URLs that are not a page a person opens, with why.
NOT_PAGES: dict[str, str] = {
    "runs:benchmark": "a JSON download",
    "runs:matrix_export": "a CSV or JSON download (the iteration page's matrix)",
    "runs:runs_export": "a CSV or JSON download (an iteration's runs)",
    "runs:eval_export": "a CSV or JSON download (the eval page's summary)",
    "runs:trend_export": "a CSV or JSON download (the skill page's trend)",
    "runs:conversation": "an htmx fragment of the run page",
    "runs:event_result": "an htmx fragment of the run page (one tool result whole)",
    "accounts:logout": "POST only",
    "accounts:create_token": "POST only",
    "accounts:revoke_token": "POST only",
    "accounts:create_share": "POST only: its answer is a fragment of the Share menu",
    "accounts:revoke_share": "POST only",
    "grading:note": "POST only",
    "grading:override": "POST only",
    "alerts:skill": "staff only, and the pages' user is not: tests/browser/test_alerts_page.py",
    "alerts:add": "POST only",
    "alerts:remove": "POST only",
    "alerts:test": "POST only: its answer is the alerts page",
}
#: URL namespaces that are no page of the dashboard.
NOT_PAGE_NAMESPACES = {"admin": "Django's admin", "api": "the JSON API (tests/runs/test_api*)"}


def url_names() -> Iterator[str]:
    """Every named URL pattern of the site, with its namespaces ("runs:eval")."""

    def walk(patterns: list, namespaces: tuple[str, ...]) -> Iterator[str]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = (*namespaces, pattern.namespace) if pattern.namespace else namespaces
                yield from walk(pattern.url_patterns, inner)
            elif isinstance(pattern, URLPattern) and pattern.name:
                yield ":".join((*namespaces, pattern.name))

    yield from walk(get_resolver().url_patterns, ())


def new_context(browser: Browser, live_server, width: int, **options) -> BrowserContext:  # noqa: ANN001
    return browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 860}, **options
    )


def log_in(page: Page) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/$"))


def sideways(page: Page) -> int:
    """How many pixels the page is wider than its window (0: no sideways scrolling)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def settle(page: Page) -> None:
    """Wait for the page's requests and charts: a chart drawn late can widen the page."""
    from playwright.sync_api import expect

    page.wait_for_load_state("networkidle")
    if page.locator("[data-chart]").count():
        expect(page.locator("[data-chart]").first).to_have_attribute("data-chart-rendered", "")
    drawn = page.locator("[data-chart-rendered]")
    for index in range(drawn.count()):
        # Laid out to its final height: a legend that wraps grows the chart after drawing.
        expect(drawn.nth(index)).to_have_attribute("data-chart-fitted", "")
