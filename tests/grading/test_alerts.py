"""Alerts: what each channel says, delivery against a local receiver and the mail outbox
(retries, a receiver that fails or hangs), secrets kept out, and the staff page."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from grading.alerts import delivery
from grading.alerts.delivery import Target, deliver, notify, webhook_problem
from grading.alerts.messages import (
    failure_alert,
    json_payload,
    regression_alert,
    slack_payload,
)
from grading.alerts.models import Delivery, Destination
from runs.importing import import_workspace
from runs.models import Skill
from tests.factories import eval_magic_iteration
from tests.grading.alerts_receiver import Receiver

pytestmark = pytest.mark.django_db

TOKEN = "s3cr3t-token-value"


@pytest.fixture(autouse=True)
def quick(settings, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.EVALSITE_SITE_URL = "https://evals.example.com"
    settings.EVALSITE_ALERT_WEBHOOKS = []
    settings.EVALSITE_ALERT_EMAILS = []
    settings.EVALSITE_ALERT_TIMEOUT = 0.3
    settings.EVALSITE_ALERT_ATTEMPTS = 3
    monkeypatch.setattr(delivery, "backoff", lambda attempt: 0.01)


def two_iterations(root: Path) -> None:
    """demo-skill #1 passes everything, #2 fails `gets-worse`: a regression since #1."""
    good = {"a1": True}
    for label, after in (("iteration-1", True), ("iteration-2", False)):
        eval_magic_iteration(
            root,
            skill="demo-skill",
            label=label,
            cells={
                ("gets-worse", "with_skill"): [{"a1": after}] * 3,
                ("gets-worse", "without_skill"): [good] * 3,
                ("steady", "with_skill"): [good] * 3,
                ("steady", "without_skill"): [good] * 3,
            },
        )
    import_workspace([root])


def report(**changes: object) -> dict:
    return {
        "skill": "demo-skill",
        "iteration": 2,
        "label": "iteration-2",
        "delta": -0.5,
        "delta_interval": [-0.8, -0.2],
        "verdict": "with_skill is worse than without_skill",
        "runs": 12,
        "errored": 0,
        "tokens": 1234,
        "regressed_evals": ["gets-worse"],
        "regression": True,
        **changes,
    }


def test_a_regression_names_the_skill_the_delta_the_evals_and_links_the_compare_page(
    tmp_path: Path,
) -> None:
    two_iterations(tmp_path)

    alert = regression_alert(report())

    assert alert.headline == (
        "demo-skill #2 (iteration-2): regression: delta −0.50 (95% CI −0.80 to −0.20)"
    )
    assert "Regressed since #1: gets-worse" in alert.details
    assert alert.compare_url == "https://evals.example.com/skills/demo-skill/compare/?a=1&b=2"
    page = logged_in(staff=False).get(alert.compare_url.removeprefix("https://evals.example.com"))
    assert page.status_code == 200 and "gets-worse" in page.content.decode()
    slack = slack_payload(alert)
    assert slack["text"].startswith("evalsite: demo-skill #2 (iteration-2): regression")
    # Slack's mrkdwn takes `&` as `&amp;`, in links too, and shows it as `&`.
    shown = alert.compare_url.replace("&", "&amp;")
    assert slack["text"].endswith(shown)
    links = slack["blocks"][-1]["elements"][0]["text"]
    assert f"<{shown}|Compare #1 → #2>" in links
    generic = json_payload(alert)
    assert generic["event"] == "regression" and generic["skill"] == "demo-skill"
    assert generic["iteration"] == 2 and generic["delta"] == -0.5
    assert generic["delta_interval"] == [-0.8, -0.2]
    assert generic["regressed_evals"] == ["gets-worse"]
    assert generic["compare_url"] == alert.compare_url


def test_slack_text_cannot_ping_or_link_what_an_agent_or_an_error_wrote() -> None:
    alert = failure_alert("demo-skill", "boom <!channel> <https://evil.example|click> & more")

    payload = slack_payload(alert)

    text = payload["text"] + payload["blocks"][0]["text"]["text"]
    assert "<!channel>" not in text and "<https://evil" not in text
    assert "&lt;!channel&gt;" in text and "&amp; more" in text


def test_a_webhook_answering_500_then_200_is_delivered_on_the_second_attempt() -> None:
    with Receiver(500, 200) as receiver:
        done = deliver(Target("json", receiver.url()), failure_alert("demo-skill", "it broke"))

    assert done.status == "delivered" and done.attempts == 2 and done.delivered_at
    assert len(receiver.received) == 2
    assert receiver.received[-1]["event"] == "failed"
    assert receiver.received[-1]["reason"] == "it broke"
    recorded = Delivery.objects.get()
    assert recorded.destination == "127.0.0.1/…" and recorded.last_error.startswith(
        "the receiver answered 500"
    )


def test_a_receiver_that_always_fails_is_tried_three_times_recorded_and_warned_once() -> None:
    warnings: list[str] = []
    with Receiver(503) as receiver:
        Skill.objects.create(name="demo-skill")
        Destination.objects.create(skill=Skill.objects.get(), kind="slack", address=receiver.url())
        deliveries = notify(failure_alert("demo-skill", "it broke"), warn=warnings.append)

    assert [d.status for d in deliveries] == ["failed"]
    assert len(receiver.received) == 3
    assert warnings == [
        "runevals: warning: alert to 127.0.0.1/… not delivered after 3 attempt(s): "
        "the receiver answered 503 Service Unavailable"
    ]
    assert TOKEN not in warnings[0]


def test_a_receiver_that_hangs_times_out_and_a_4xx_is_not_retried() -> None:
    with Receiver("slow") as slow, Receiver(404) as gone:
        hung = deliver(Target("json", slow.url()), failure_alert("demo-skill", "x"))
        refused = deliver(Target("slack", gone.url()), failure_alert("demo-skill", "x"))

    assert hung.status == "failed" and hung.attempts == 3
    assert hung.last_error == "no answer within 0.3 s"
    assert refused.status == "failed" and refused.attempts == 1
    assert refused.last_error == "the receiver answered 404 Not Found"


def test_an_unreachable_receiver_fails_without_failing_the_caller() -> None:
    with Receiver() as receiver:
        url = receiver.url()
    # The server is closed: nothing listens on its port any more.
    done = deliver(Target("json", url), failure_alert("demo-skill", "x"))

    assert done.status == "failed" and "Connection refused" in done.last_error


def test_e_mail_goes_through_djangos_mail_settings(tmp_path: Path, settings) -> None:
    settings.EVALSITE_ALERT_EMAILS = ["ops@example.com", "lead@example.com"]
    settings.DEFAULT_FROM_EMAIL = "evalsite@example.com"
    two_iterations(tmp_path)

    deliveries = notify(regression_alert(report()))

    assert {d.status for d in deliveries} == {"delivered"}
    assert [m.to for m in mail.outbox] == [["ops@example.com"], ["lead@example.com"]]
    message = mail.outbox[0]
    assert message.from_email == "evalsite@example.com"
    assert message.subject.startswith("[evalsite] demo-skill #2 (iteration-2): regression")
    assert "Regressed since #1: gets-worse" in message.body
    assert "https://evals.example.com/skills/demo-skill/compare/?a=1&b=2" in message.body


def test_secrets_stay_out_of_messages_records_and_errors(settings, monkeypatch) -> None:
    settings.EMAIL_HOST_PASSWORD = "mail-password-123"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-abcdefghijklmnop")
    with Receiver(500) as receiver:
        url = receiver.url()
        settings.EVALSITE_ALERT_WEBHOOKS = [f"json:{url}"]
        reason = f"finalising failed: sk-ant-api03-abcdefghijklmnop mail-password-123 {url}"
        deliveries = notify(failure_alert("demo-skill", reason))
        # A URL the HTTP client rejects quotes its path in the error: cut all the same.
        bad = deliver(Target("json", f"{url}/with space"), failure_alert("demo-skill", "x"))

    said = [*map(str, receiver.received), deliveries[0].last_error, bad.last_error]
    said += [d.headline for d in Delivery.objects.all()]
    for text in said:
        assert (
            TOKEN not in text and "mail-password-123" not in text and "abcdefghijklmnop" not in text
        )
    assert receiver.received[0]["reason"] == "finalising failed: … … …"


def test_webhooks_are_http_only_and_link_local_hosts_are_refused(settings) -> None:
    assert (
        webhook_problem("ftp://example.com/x") == "a webhook URL starts with https:// (or http://)"
    )
    assert webhook_problem("file:///etc/passwd") is not None
    refused = webhook_problem("http://169.254.169.254/latest/meta-data/")
    assert refused is not None and refused.startswith("169.254.169.254/… is a link-local address")
    done = deliver(Target("json", "http://169.254.169.254/x"), failure_alert("demo-skill", "x"))
    assert done.status == "failed" and done.attempts == 1
    settings.EVALSITE_ALERT_ALLOW_LINK_LOCAL = True
    assert webhook_problem("http://169.254.169.254/latest/meta-data/") is None


def test_site_wide_webhooks_take_a_kind_prefix_or_guess_it(settings) -> None:
    from grading.alerts.config import settings_webhooks

    settings.EVALSITE_ALERT_WEBHOOKS = [
        "slack:https://chat.example.com/hooks/a",
        "json:https://ci.example.com/hook",
        "https://hooks.slack.com/services/T/B/x",
        "https://other.example.com/hook",
    ]
    assert [kind for kind, _ in settings_webhooks()] == ["slack", "json", "slack", "json"]
    assert settings_webhooks()[0][1] == "https://chat.example.com/hooks/a"


# --- the staff page -----------------------------------------------------------------------


@pytest.fixture
def skill() -> Skill:
    return Skill.objects.create(name="demo-skill")


def logged_in(*, staff: bool) -> Client:
    user = get_user_model().objects.create_user(
        "staff" if staff else "reader", password="pw", is_staff=staff
    )
    client = Client()
    client.force_login(user)
    return client


def test_only_staff_open_a_skills_alerts_page(skill: Skill) -> None:
    address = "/skills/demo-skill/alerts/"
    assert Client().get(address).status_code == 302  # to the login page
    reader = logged_in(staff=False)
    assert reader.get(address).status_code == 403
    assert reader.post(f"{address}add/", {"kind": "email", "address": "a@b.co"}).status_code == 403
    assert not Destination.objects.exists()
    assert "/alerts/" not in reader.get("/skills/demo-skill/").content.decode()
    staff = logged_in(staff=True)
    assert staff.get(address).status_code == 200
    assert 'href="/skills/demo-skill/alerts/"' in staff.get("/skills/demo-skill/").content.decode()
    assert staff.get("/skills/no-such-skill/alerts/").status_code == 404


def test_staff_add_a_webhook_shown_by_its_host_only_then_test_and_remove_it(skill: Skill) -> None:
    staff = logged_in(staff=True)
    with Receiver(200) as receiver:
        answer = staff.post(
            "/skills/demo-skill/alerts/add/", {"kind": "slack", "address": receiver.url()}
        )
        assert answer.status_code == 302
        page = staff.get("/skills/demo-skill/alerts/").content.decode()
        assert "127.0.0.1/…" in page and TOKEN not in page

        tested = staff.post("/skills/demo-skill/alerts/test/").content.decode()

    assert receiver.received[0]["text"].startswith("evalsite: demo-skill: test alert")
    assert "delivered" in tested and TOKEN not in tested
    assert Delivery.objects.get().event == "test"
    destination = Destination.objects.get()
    assert staff.post(f"/skills/demo-skill/alerts/{destination.pk}/remove/").status_code == 302
    assert not Destination.objects.exists()


def test_a_bad_destination_is_refused_in_one_line_and_nothing_is_kept(skill: Skill) -> None:
    staff = logged_in(staff=True)
    for kind, address, said in (
        ("email", "not-an-address", "that is not an e-mail address"),
        ("json", "javascript:alert(1)", "a webhook URL starts with https://"),
        ("slack", "http://169.254.169.254/x?token=abc", "169.254.169.254/… is a link-local"),
    ):
        answer = staff.post("/skills/demo-skill/alerts/add/", {"kind": kind, "address": address})
        assert answer.status_code == 400
        assert said in answer.content.decode()
    assert "token=abc" not in answer.content.decode()
    assert not Destination.objects.exists()
    assert staff.get("/skills/demo-skill/alerts/add/").status_code == 405


def test_the_page_escapes_what_deliveries_recorded(skill: Skill) -> None:
    Delivery.objects.create(
        skill_name="demo-skill",
        event="failed",
        channel="json",
        destination="x/…",
        headline="demo-skill: campaign failed: <script>alert(1)</script>",
        status="failed",
        attempts=3,
        last_error="<b>bold</b>",
    )
    page = logged_in(staff=True).get("/skills/demo-skill/alerts/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert "<b>bold</b>" not in page


def test_the_page_takes_the_same_few_queries_however_many_deliveries(
    skill: Skill, django_assert_max_num_queries
) -> None:
    staff = logged_in(staff=True)
    for index in range(30):
        Destination.objects.create(skill=skill, kind="email", address=f"p{index}@example.com")
        Delivery.objects.create(
            skill_name="demo-skill", event="test", channel="email", destination="x",
            headline="h", status="delivered", attempts=1,
        )  # fmt: skip
    with django_assert_max_num_queries(8):
        assert staff.get("/skills/demo-skill/alerts/").status_code == 200


def test_manage_py_check_names_a_bad_site_wide_setting_without_its_token(settings) -> None:
    from grading.alerts.checks import check_alert_settings

    settings.EVALSITE_ALERT_WEBHOOKS = [f"json:ftp://hooks.example.com/{TOKEN}"]
    settings.EVALSITE_ALERT_EMAILS = ["nobody"]

    said = [problem.msg for problem in check_alert_settings()]

    assert said == [
        "EVALSITE_ALERT_WEBHOOKS: hooks.example.com/…: "
        "a webhook URL starts with https:// (or http://)",
        "EVALSITE_ALERT_EMAILS: 'nobody' is not an e-mail address",
    ]
