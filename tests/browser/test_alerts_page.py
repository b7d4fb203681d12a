"""A skill's alerts page as staff use it, at phone width: no sideways scrolling with a long
webhook and a long delivery error, and a destination added through the form (no JavaScript
needed)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from grading.alerts.models import Delivery, Destination
from runs.models import Skill
from tests.browser import CHROMIUM
from tests.browser.conftest import USERNAME
from tests.browser.pages import SKILL, WIDTHS, log_in, new_context, sideways

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no Chromium at {CHROMIUM}"),
]


def test_staff_read_and_add_alert_destinations_at_phone_width(
    browser, live_server, sample: None
) -> None:
    get_user_model().objects.filter(username=USERNAME).update(is_staff=True)
    skill = Skill.objects.get(name="taming-flaky-tests")
    Destination.objects.create(
        skill=skill, kind="slack", address="https://hooks.slack.com/services/T0/B0/" + "x" * 80
    )
    Delivery.objects.create(
        skill_name=skill.name,
        event="regression",
        channel="slack",
        destination="hooks.slack.com/…",
        headline=f"{skill.name} #3 (iteration-3): regression: delta −0.25 " + "evals " * 30,
        status="failed",
        attempts=3,
        last_error="the receiver answered 500 Internal Server Error " + "y" * 120,
    )
    context = new_context(browser, live_server, WIDTHS["phone"])
    page = context.new_page()
    log_in(page)

    page.goto(f"{SKILL}")
    page.get_by_role("link", name="Alerts").click()
    expect(page.get_by_role("heading", name="Alerts taming-flaky-tests")).to_be_visible()
    assert "x" * 20 not in page.content()  # the webhook's token: its host only
    assert sideways(page) == 0

    page.select_option("#id_kind", "email")
    page.fill("#id_address", "oncall@example.com")
    page.get_by_role("button", name="Add").click()
    expect(page.locator("table.alert-destinations")).to_contain_text("oncall@example.com")
    assert sideways(page) == 0
    context.close()
