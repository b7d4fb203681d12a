"""A shared view shows only what works inside its share scope, and copies the share link."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import ShareLink
from accounts.sharing import share_view
from runs.importing import import_workspace

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SKILL = "taming-flaky-tests"
ITERATION = f"/skills/{SKILL}/iterations/3/"
EVAL = f"{ITERATION}evals/timezone-boundary-flake/"


@pytest.fixture
def sample() -> None:
    import_workspace([ROOT / "runs" / "sample"])


def opened(user, address: str) -> tuple[Client, str]:
    """A browser without an account that opened a share link to `address`; and the link."""
    created = share_view(creator=user, address=address)
    visitor = Client()
    url = reverse("share", args=[created.secret])
    assert visitor.get(url).status_code == 302
    return visitor, url


def links(page: str, html: str, attributes: tuple[str, ...] = ("href", "hx-get")) -> set[str]:
    """Every same-site address the page links or points htmx at ("?…" read against `page`)."""
    found = set()
    for attribute in attributes:
        for value in re.findall(rf'\b{attribute}="([^"]*)"', html):
            value = unescape(value).split("#")[0]
            if value.startswith("?"):
                value = urlsplit(page).path + value
            if value.startswith("/") and not value.startswith("/static/"):
                found.add(value)
    return found


@pytest.mark.parametrize(
    "shared", [ITERATION, EVAL, f"{EVAL}with_skill/1/", f"/skills/{SKILL}/compare/?a=2&b=3"]
)
def test_every_link_of_a_shared_view_opens_inside_the_share(user, sample, shared) -> None:
    visitor, _ = opened(user, shared)
    page = visitor.get(shared)
    assert page.status_code == 200
    html = page.content.decode()
    seen = links(shared, html)
    assert seen, "the shared view has no links at all"
    # A GET form's address needs its fields: it must lie inside the share, as its links do.
    link = ShareLink.objects.get()
    for action in links(shared, html, ("action",)):
        assert link.opens(action), (shared, action)
    for address in sorted(seen):
        response = visitor.get(address)
        assert response.status_code in {200, 302}, (shared, address, response.status_code)
        if response.status_code == 302:
            assert "/accounts/login/" not in response["Location"], (shared, address)


def test_a_shared_iteration_leaves_out_what_its_share_does_not_open(user, sample) -> None:
    visitor, _ = opened(user, ITERATION)
    html = visitor.get(ITERATION).content.decode()
    assert "Compare with #2" not in html
    assert " per eval</a>" not in html
    assert 'href="/"' not in html  # the list of every skill
    assert f'href="/skills/{SKILL}/"' not in html
    assert "eval-magic benchmark.json" in html  # beneath the iteration: shared too


def test_a_teammate_sees_every_link_the_share_leaves_out(client, sample) -> None:
    html = client.get(ITERATION).content.decode()
    assert "Compare with #2" in html
    assert " per eval</a>" in html
    assert f'href="/skills/{SKILL}/"' in html


def test_a_shared_comparison_offers_no_form_to_choose_another(user, sample) -> None:
    shared = f"/skills/{SKILL}/compare/?a=2&b=3"
    visitor, _ = opened(user, shared)
    html = visitor.get(shared).content.decode()
    assert 'name="a"' not in html
    assert "Per eval" in html


def test_a_shared_comparison_can_be_sorted_and_filtered_but_not_changed(user, sample) -> None:
    shared = f"/skills/{SKILL}/compare/?a=2&b=3"
    visitor, _ = opened(user, shared)
    html = visitor.get(shared).content.decode()
    assert 'href="?a=2&amp;b=3&amp;sort=-change"' in html  # the sort links are offered
    sorted_view = visitor.get(f"{shared}&sort=-change&show=improved&rows=all")
    assert sorted_view.status_code == 200
    assert visitor.get(f"/skills/{SKILL}/compare/?a=1&b=3&sort=-change").status_code == 302


def test_copy_link_in_a_shared_view_copies_a_share_link_to_the_page_shown(user, sample) -> None:
    visitor, share_url = opened(user, ITERATION)
    html = visitor.get(EVAL).content.decode()
    (copied,) = re.findall(r'data-copy-link="([^"]+)"', html)
    copied = unescape(copied)
    parts = urlsplit(copied)
    assert parts.path == share_url
    assert parts.query == "to=" + EVAL.replace("/", "%2F")

    stranger = Client()
    response = stranger.get(parts.path + "?" + parts.query)
    assert response.status_code == 302 and response["Location"] == EVAL
    assert stranger.get(EVAL).status_code == 200


def test_a_share_link_never_sends_its_holder_outside_its_scope(user, sample) -> None:
    _, share_url = opened(user, EVAL)
    for elsewhere in (ITERATION, "/", "//evil.example/", "https://evil.example/", "/admin/"):
        response = Client().get(share_url, {"to": elsewhere})
        assert response["Location"] == EVAL, elsewhere


def test_a_teammate_copies_the_plain_address(client, sample) -> None:
    html = client.get(ITERATION).content.decode()
    assert 'data-copy-link=""' in html
