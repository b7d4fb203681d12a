"""Alerts from runevals campaigns: played here, and queued (Celery in-process, as
tests/grading/campaigns/ run them): a regression, a failure, a budget stop, each said once;
a failed delivery is a warning line and never changes the exit status.

The queued-campaign tests' fixtures are imported from their conftest; the tests take them as
parameters, which ruff reads as redefining the imported names.
"""
# ruff: noqa: F811

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.core import mail
from django.core.management import CommandError, call_command
from django.utils import timezone

from grading.alerts import delivery
from grading.alerts.models import Delivery
from grading.campaigns import execute, workflow
from grading.campaigns.models import Campaign, QueuedIteration
from grading.campaigns.report import CampaignResult
from tests.fakeapi import FakeAnthropic
from tests.grading.alerts_receiver import Receiver
from tests.grading.campaigns.conftest import api, celery_held, celery_here, workspace  # noqa: F401
from tests.grading.test_runevals import make_skill, worse_with_skill

pytestmark = pytest.mark.django_db

#: Three evals the skill makes worse: with it, the agent reads instead of writing.
WORSE_EVALS = [
    {
        "id": f"e{i}",
        "prompt": f"Task {i}.",
        "expected_output": "x",
        "assertions": [
            {
                "id": "writes",
                "type": "transcript_check",
                "check": "tool_invocation_matches",
                "pattern": "^Write",
            }
        ],
    }
    for i in range(3)
]


@pytest.fixture(autouse=True)
def alerting(settings, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.EVALSITE_SITE_URL = "https://evals.example.com"
    settings.EVALSITE_ALERT_WEBHOOKS = []
    settings.EVALSITE_ALERT_EMAILS = ["ops@example.com"]
    settings.EVALSITE_ALERT_TIMEOUT = 0.5
    monkeypatch.setattr(delivery, "backoff", lambda attempt: 0.01)


def runevals(*args: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of runevals with the messages harness."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("runevals", "--harness", "messages", *args, stdout=out, stderr=err)
    except CommandError as exc:
        return exc.returncode, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def test_a_regression_here_is_alerted_to_a_webhook_and_by_e_mail_and_the_exit_status_stays_1(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, settings
) -> None:
    api.script = worse_with_skill
    with Receiver(200) as receiver:
        settings.EVALSITE_ALERT_WEBHOOKS = [f"json:{receiver.url()}"]
        status, _, err = runevals(str(make_skill(tmp_path, WORSE_EVALS)), "--fail-on-regression")

    assert status == 1 and "warning" not in err
    [alert] = receiver.received
    assert alert["event"] == "regression" and alert["skill"] == "demo"
    assert alert["iteration"] == 1 and alert["delta"] < 0 and alert["delta_interval"][1] < 0
    assert alert["links"]["Iteration #1"] == "https://evals.example.com/skills/demo/iterations/1/"
    [message] = mail.outbox
    assert message.to == ["ops@example.com"]
    assert message.subject.startswith("[evalsite] demo #1 (iteration-1): regression: delta −")
    assert set(Delivery.objects.values_list("event", "status")) == {("regression", "delivered")}


def test_a_failed_delivery_is_one_warning_line_and_changes_nothing_else(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, settings
) -> None:
    api.script = worse_with_skill
    settings.EVALSITE_ALERT_EMAILS = []
    with Receiver(500) as receiver:
        settings.EVALSITE_ALERT_WEBHOOKS = [f"slack:{receiver.url()}"]
        status, out, err = runevals(str(make_skill(tmp_path, WORSE_EVALS)), "--fail-on-regression")

    assert status == 1 and out.splitlines()[-1].startswith("demo #1 (iteration-1)")
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert warnings == [
        "runevals: warning: alert to 127.0.0.1/… not delivered after 3 attempt(s): "
        "the receiver answered 500 Internal Server Error"
    ]
    assert len(receiver.received) == 3
    assert "s3cr3t" not in err + out


def test_no_alerts_sends_none(tmp_path: Path, workspace: Path, api: FakeAnthropic) -> None:
    api.script = worse_with_skill
    status, _, _ = runevals(str(make_skill(tmp_path, WORSE_EVALS)), "--no-alerts")

    assert status == 0 and not mail.outbox and not Delivery.objects.exists()


def test_a_campaign_that_cannot_run_here_is_alerted_as_failed(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    status, _, _ = runevals(str(make_skill(tmp_path)))

    assert status == 2
    [message] = mail.outbox
    assert message.subject == (
        "[evalsite] demo: campaign failed: ANTHROPIC_API_KEY is not set: "
        "runevals needs it to call the Anthropic API"
    )
    assert "https://evals.example.com/skills/demo/" in message.body
    # A dry run calls nothing and tells no one.
    mail.outbox.clear()
    runevals("--dry-run", str(tmp_path / "no-such-skill"))
    assert not mail.outbox


def test_a_budget_stop_is_alerted_with_its_reason(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    reason = "the budget of $5.00 would be exceeded"
    monkeypatch.setattr(workflow, "run_here", lambda *a, **k: CampaignResult(budget_stopped=reason))

    status, _, _ = runevals(str(make_skill(tmp_path)))

    assert status == 1  # a budget stop exits 1 (README: runevals' exit status)
    [message] = mail.outbox
    assert message.subject == f"[evalsite] demo: stopped by its budget: {reason}"
    assert Delivery.objects.get().event == "budget_stopped"


# --- queued campaigns --------------------------------------------------------------------


def test_a_queued_regression_is_alerted_once_by_the_worker_that_finalises_it(
    tmp_path: Path, workspace: Path, api: FakeAnthropic, celery_here: None
) -> None:
    api.script = worse_with_skill

    status, _, _ = runevals("--queue", "--wait", str(make_skill(tmp_path, WORSE_EVALS)))

    assert status == 0 and QueuedIteration.objects.get().state == "imported"
    [message] = mail.outbox  # the worker's, and not a second one from --wait
    assert message.subject.startswith("[evalsite] demo #1 (iteration-1): regression")


def test_a_queued_iteration_that_fails_to_finalise_is_alerted_once_and_exits_2(
    tmp_path: Path,
    workspace: Path,
    api: FakeAnthropic,
    celery_here: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(iteration: QueuedIteration) -> dict:
        raise RuntimeError("the store is away")

    monkeypatch.setattr(execute, "_assemble_and_import", broken)

    status, _, _ = runevals("--queue", "--wait", str(make_skill(tmp_path)))

    assert status == 2 and QueuedIteration.objects.get().state == "failed"
    [message] = mail.outbox
    assert message.subject.startswith("[evalsite] demo iteration-1: campaign failed: finalising")
    assert "RuntimeError: the store is away" in message.subject
    campaign = Campaign.objects.get()
    assert f"https://evals.example.com/campaigns/{campaign.pk}/" in message.body


def test_a_stalled_wait_and_an_abandoned_iteration_are_alerted(
    tmp_path: Path,
    workspace: Path,
    api: FakeAnthropic,
    celery_held: None,
    settings,
    django_capture_on_commit_callbacks,
) -> None:
    skill = str(make_skill(tmp_path))
    settings.EVALSITE_QUEUE_STALE_AFTER = 0.2  # no worker reads the in-memory broker

    status, _, _ = runevals("--queue", "--wait", skill)

    assert status == 2
    [stalled] = mail.outbox
    assert (
        "campaign failed: campaign #" in stalled.subject and "made no progress" in stalled.subject
    )

    settings.EVALSITE_QUEUE_STALE_AFTER = 3600
    Campaign.objects.update(created_at=timezone.now() - timedelta(hours=2))
    with django_capture_on_commit_callbacks(execute=True):
        runevals("--queue", skill)

    assert QueuedIteration.objects.filter(state="abandoned").count() == 1
    abandoned = mail.outbox[-1]
    assert abandoned.subject.startswith(
        "[evalsite] demo iteration-1: campaign failed: abandoned: no run activity since"
    )
    assert len(mail.outbox) == 2
