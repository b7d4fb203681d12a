"""The campaign page: a running campaign's runs done / errored / running / pending, polled by
htmx until it is finished, a plain page (meta refresh, a reload link) without JavaScript."""

from __future__ import annotations

import pytest
from django.test import Client

from grading.campaigns.models import Campaign, QueuedIteration, QueuedRun
from tests.factories import eval_magic_iteration

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign() -> Campaign:
    campaign = Campaign.objects.create(
        requested_by="runevals pid 7 on ci", options={"harness": "messages", "sandbox": True}
    )
    queued = QueuedIteration.objects.create(
        campaign=campaign, skill_name="demo", label="iteration-3", plan={}
    )
    for index, state in enumerate(["done", "done", "errored", "running", "pending"], start=1):
        QueuedRun.objects.create(
            iteration=queued, eval_id="e", condition="with_skill", run_index=index, state=state
        )
    return campaign


def cells(page: str) -> list[str]:
    row = page.split("<td>demo</td>", 1)[1].split("</tr>", 1)[0]
    return [cell.split(">", 1)[1] for cell in row.split("</td>")[3:7]]


def test_a_running_campaign_shows_its_runs_and_polls(client: Client, campaign: Campaign) -> None:
    page = client.get(campaign.get_absolute_url()).content.decode()

    assert "<h1>Campaign #" in page and "runevals pid 7 on ci" in page
    assert cells(page) == ["2", "1", "1", "1"]  # done, errored, running, pending
    assert '<progress max="5" value="3">' in page
    assert 'hx-trigger="every 3s"' in page
    assert '<noscript><meta http-equiv="refresh" content="3"></noscript>' in page
    assert f'<a href="{campaign.get_absolute_url()}">Reload</a>' in page


def test_htmx_gets_the_progress_alone_and_stops_polling_once_finished(
    client: Client, campaign: Campaign
) -> None:
    fragment = client.get(campaign.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<section id="progress"') and "<h1>" not in fragment

    QueuedRun.objects.update(state="done")
    iteration = eval_magic_iteration_in_db()
    QueuedIteration.objects.update(
        state="imported", iteration=iteration, report={"summary": "demo #1: all good"}
    )
    fragment = client.get(campaign.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()

    assert "hx-trigger" not in fragment and "Finished" in fragment
    assert "demo #1: all good" in fragment
    assert f'href="{iteration.get_absolute_url()}"' in fragment
    page = client.get(campaign.get_absolute_url()).content.decode()
    assert "http-equiv" not in page


def eval_magic_iteration_in_db():
    import tempfile
    from pathlib import Path

    from runs.importing import import_workspace
    from runs.models import Iteration

    with tempfile.TemporaryDirectory() as scratch:
        import_workspace([eval_magic_iteration(Path(scratch) / "w", skill="demo")])
    return Iteration.objects.get()


def test_it_needs_a_login_and_says_404_for_no_such_campaign(
    client: Client, campaign: Campaign
) -> None:
    response = Client().get(campaign.get_absolute_url())
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert client.get("/campaigns/999/").status_code == 404


def test_the_skill_page_links_to_its_running_campaign(client: Client, campaign: Campaign) -> None:
    eval_magic_iteration_in_db()

    page = client.get("/skills/demo/").content.decode()

    assert f'<a href="{campaign.get_absolute_url()}">See campaign #{campaign.pk}</a>' in page
    assert "3 of 5 runs finished" in page


def test_staff_read_a_campaign_in_the_admin_and_may_only_delete_it(campaign: Campaign) -> None:
    from django.contrib.auth import get_user_model

    staff = get_user_model().objects.create_superuser("ops", password="x")
    admin = Client()
    admin.force_login(staff)

    listing = admin.get("/admin/campaigns/campaign/").content.decode()
    page = admin.get(f"/admin/campaigns/campaign/{campaign.pk}/change/").content.decode()

    assert "runevals pid 7 on ci" in listing and "demo (running)" in listing
    assert "iteration-3" in page and 'name="_save"' not in page
    assert admin.get("/admin/campaigns/campaign/add/").status_code == 403
    admin.post(f"/admin/campaigns/campaign/{campaign.pk}/delete/", {"post": "yes"})
    assert not QueuedIteration.objects.exists()  # the skill's lock is released
