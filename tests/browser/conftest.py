"""A Chromium per session, a fresh page per test, the sample workspace behind the live server."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from django.contrib.auth import get_user_model

from runs.importing import import_workspace
from runs.models import TriggerQuery, TriggerRun
from tests.browser import CHROMIUM
from tests.factories import trigger_result, write_json

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Dialog, Page

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-output" / "browser"
USERNAME, PASSWORD = "reviewer", "correct horse battery"
#: Trigger queries of the `triggers` fixture: markup an agent might echo, and a word with no
#: spaces to break at (a page that cannot wrap it must scroll it inside its own box).
XSS = "<img src=x onerror=alert(1)>"
LONG = "release-notes-" * 12
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    from playwright.sync_api import expect, sync_playwright

    # Parsing plotly.js (4.6 MB) and drawing four charts takes seconds on a busy CI box;
    # a wait that only fails when the machine is slow would be noise. Page actions keep
    # Playwright's own 30 s default.
    expect.set_options(timeout=15_000)

    with pytest.MonkeyPatch.context() as patch:
        # Playwright's sync API runs an asyncio event loop in the main thread (it switches
        # greenlets, so the loop stays "running" between calls). Django's async_unsafe guard
        # sees that loop and refuses every ORM call from this thread, the sample import and
        # transactional_db's flush included, with SynchronousOnlyOperation. Those calls are
        # plain synchronous code that never runs inside a coroutine, so the guard protects
        # nothing here. It stays off until the session ends, because Playwright's loop lives
        # as long as this fixture: tests collected after the browser tests run without it.
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()


@pytest.fixture
def sample(transactional_db: None) -> None:
    # The live server reads through another connection, so the data must be committed;
    # transactional_db flushes it after every test, hence one import (about 1 s) per test.
    import_workspace([ROOT / "runs" / "sample"])
    get_user_model().objects.create_user(USERNAME, password=PASSWORD)


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


@pytest.fixture
def campaign(sample: None) -> int:
    """A queued campaign half done (its progress page's id)."""
    from grading.campaigns.models import Campaign, QueuedIteration, QueuedRun

    queued = QueuedIteration.objects.create(
        campaign=Campaign.objects.create(requested_by="runevals pid 7 on ci"),
        skill_name="taming-flaky-tests",
        label="iteration-5",
        plan={},
    )
    for index, state in enumerate(["done", "errored", "running", "pending"], start=1):
        QueuedRun.objects.create(
            iteration=queued, eval_id="e", condition="with_skill", run_index=index, state=state
        )
    return queued.campaign_id


@pytest.fixture
def page(browser: Browser, live_server, sample: None) -> Iterator[Page]:
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    # Every page needs an account: log in through the login page, as a teammate would.
    tab.goto("/accounts/login/")
    tab.fill("#id_username", USERNAME)
    tab.fill("#id_password", PASSWORD)
    tab.click("button[type=submit]")
    tab.wait_for_url(re.compile(r".*/$"))
    yield tab
    context.close()


@pytest.fixture
def js_errors(page: Page) -> list[str]:
    """Uncaught exceptions and console errors (failed loads included) of the test's page."""
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        # Chromium asks every site for /favicon.ico, whether or not a page links one; the
        # dashboard has none, and that 404 says nothing about the page's own code.
        favicon = message.location.get("url", "").endswith("/favicon.ico")
        if message.type == "error" and not favicon:
            errors.append(f"console: {message.text} ({page.url})")

    page.on("pageerror", lambda error: errors.append(f"pageerror: {error} ({page.url})"))
    page.on("console", on_console)
    return errors


@pytest.fixture
def dialogs(page: Page) -> list[str]:
    """Messages of every alert/confirm/prompt the page opened; each is dismissed at once."""
    seen: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        seen.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    return seen


@pytest.fixture
def screenshot(page: Page, request: pytest.FixtureRequest) -> Callable[[str], Path]:
    """Save a full-page screenshot as test-output/browser/<test name>-<label>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    test_name = re.sub(r"[^\w.-]+", "_", request.node.name)

    def save(label: str) -> Path:
        path = SCREENSHOTS / f"{test_name}-{label}.png"
        # A full-page capture of a scrolled page paints the sticky header mid-page.
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=path, full_page=True)
        return path

    return save
