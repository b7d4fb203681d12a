"""The quickstart try-out (DEBUG on) shows the site's own 404 page, not Django's."""

from __future__ import annotations

import pytest


@pytest.fixture
def tryout(settings):
    settings.DEBUG = True
    settings.EVALSITE_STYLED_404 = True
    return settings


def test_an_unknown_address_gets_the_sites_page(client, tryout) -> None:
    response = client.get("/no/such/page/")

    assert response.status_code == 404
    body = response.content.decode()
    assert "Back to every skill" in body and "There is nothing at /no/such/page/" in body
    assert "URLconf" not in body and "Django tried these URL patterns" not in body


def test_a_views_reason_is_kept(client, tryout) -> None:
    response = client.get("/skills/no-such-skill/")

    assert response.status_code == 404
    assert "no-such-skill" in response.content.decode()
    assert "Back to every skill" in response.content.decode()


def test_the_apis_json_404_is_left_alone(client, tryout) -> None:
    response = client.get("/api/skills/no-such-skill")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")


def test_plain_debug_keeps_djangos_page_for_developers(client, settings) -> None:
    settings.DEBUG = True
    settings.EVALSITE_STYLED_404 = False

    response = client.get("/no/such/page/")

    assert response.status_code == 404
    assert "Django tried these URL patterns" in response.content.decode()
