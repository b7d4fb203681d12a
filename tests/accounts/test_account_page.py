"""Logging in and out, API tokens shown once, share links made, listed and revoked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import Client

from accounts.models import ApiToken, ShareLink
from runs.importing import import_workspace

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
ITERATION = "/skills/taming-flaky-tests/iterations/2/"


@pytest.fixture
def sample() -> None:
    import_workspace([ROOT / "runs" / "sample"])


def test_logging_in_takes_you_where_you_were_going(user, sample) -> None:
    client = Client()
    response = client.get(ITERATION)
    assert response["Location"] == f"/accounts/login/?next={ITERATION}"
    page = client.get(response["Location"]).content.decode()
    assert "Log in" in page and 'name="next"' in page

    wrong = client.post("/accounts/login/", {"username": "reviewer", "password": "nope"})
    assert "Please enter a correct username and password" in wrong.content.decode()
    right = client.post(
        "/accounts/login/",
        {"username": "reviewer", "password": "correct horse battery", "next": ITERATION},
    )
    assert right["Location"] == ITERATION
    assert client.get(ITERATION).status_code == 200

    assert client.post("/accounts/logout/")["Location"] == "/accounts/login/"
    assert client.get(ITERATION).status_code == 302


def test_a_new_api_token_is_shown_once(client: Client) -> None:
    created = client.post("/accounts/tokens/", {"name": "CI"}).content.decode()
    secret = re.search(r"<pre class=\"secret\" data-secret>([^<]+)</pre>", created).group(1)
    token = ApiToken.objects.get()
    assert token.digest != secret and ApiToken.objects.find(secret) == token

    later = client.get("/accounts/").content.decode()
    assert secret not in later
    assert f"{token.prefix}…" in later

    client.post(f"/accounts/tokens/{token.pk}/revoke/")
    assert ApiToken.objects.find(secret) is None
    assert "revoked" in client.get("/accounts/").content.decode()


def test_someone_elses_token_or_link_cannot_be_revoked(client: Client, django_user_model) -> None:
    other = django_user_model.objects.create_user("other", password="x" * 12)
    token = ApiToken(user=other, name="theirs")
    token.set_secret()
    token.save()
    assert client.post(f"/accounts/tokens/{token.pk}/revoke/").status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_a_page_is_shared_listed_and_revoked(client: Client, sample) -> None:
    page = client.get(f"{ITERATION}?failures=1").content.decode()
    assert 'action="/accounts/shares/"' in page
    assert 'action="/accounts/shares/"' not in client.get("/").content.decode()

    created = client.post(
        "/accounts/shares/", {"path": f"{ITERATION}?failures=1", "expires": "7"}
    ).content.decode()
    url = re.search(r"<pre class=\"secret\" data-secret>([^<]+)</pre>", created).group(1)
    link = ShareLink.objects.get()
    assert (link.kind, link.path, link.scope) == (
        "iteration",
        f"{ITERATION}?failures=1",
        {"skill": "taming-flaky-tests", "number": "2"},
    )
    assert link.expires_at is not None

    outsider = Client()
    opened = outsider.get(url.removeprefix("http://testserver"))
    assert opened["Location"] == f"{ITERATION}?failures=1"
    assert outsider.get(opened["Location"]).status_code == 200

    listing = client.get("/accounts/").content.decode()
    assert f"/s/{link.prefix}…" in listing and url not in listing
    client.post(f"/accounts/shares/{link.pk}/revoke/")
    assert outsider.get(ITERATION).status_code == 302


def test_a_comparison_link_opens_that_comparison_only(client: Client, sample) -> None:
    compare = "/skills/taming-flaky-tests/compare/?b=4&a=3"
    created = client.post("/accounts/shares/", {"path": compare}).content.decode()
    url = re.search(r"<pre class=\"secret\" data-secret>([^<]+)</pre>", created).group(1)
    outsider = Client()
    outsider.get(url.removeprefix("http://testserver"))
    assert outsider.get("/skills/taming-flaky-tests/compare/?a=3&b=4").status_code == 200
    assert outsider.get("/skills/taming-flaky-tests/compare/?a=1&b=4").status_code == 302
    assert outsider.get("/skills/taming-flaky-tests/").status_code == 302


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/", "/ cannot be shared: share a skill, iteration, eval, run or trigger iteration"),
        ("/accounts/", "/accounts/ cannot be shared"),
        ("https://evil.example/skills/x/", "only addresses on this site can be shared"),
        ("/skills/nope/", "no skill named “nope”"),
        ("/no/such/page/", "/no/such/page/ is not a page of this site"),
    ],
)
def test_what_cannot_be_shared_is_refused_with_a_reason(
    client: Client, sample, path: str, message: str
) -> None:
    response = client.post("/accounts/shares/", {"path": path})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not ShareLink.objects.exists()


def test_changing_the_password(client: Client, user) -> None:
    response = client.post(
        "/accounts/password/",
        {
            "old_password": "correct horse battery",
            "new_password1": "a much longer passphrase",
            "new_password2": "a much longer passphrase",
        },
    )
    assert response["Location"] == "/accounts/password/done/"
    user.refresh_from_db()
    assert user.check_password("a much longer passphrase")


def test_a_token_can_be_made_to_expire(client: Client) -> None:
    client.post("/accounts/tokens/", {"name": "CI", "expires": "30"})
    token = ApiToken.objects.get()
    days = (token.expires_at - token.created_at).days
    assert days in {29, 30}
    row = client.get("/accounts/").content.decode().split("<tbody>")[1]
    assert row.split("</td>")[3].endswith(token.expires_at.strftime("%Y-%m-%d %H:%M"))


def test_logins_are_refused_after_ten_failures(user, settings) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "evalsite-login-throttle-tests",
        }
    }
    cache.clear()
    client = Client()
    for _ in range(10):
        assert (
            client.post("/accounts/login/", {"username": "reviewer", "password": "no"}).status_code
            == 200
        )
    refused = client.post(
        "/accounts/login/", {"username": "reviewer", "password": "correct horse battery"}
    )
    assert refused.status_code == 429
    assert "Too many failed logins" in refused.content.decode()
    other = client.post("/accounts/login/", {"username": "someone-else", "password": "no"})
    assert other.status_code == 200


@pytest.mark.parametrize("spelling", ["ｒｅｖｉｅｗｅｒ", "REVIEWER", "Reviewer "])
def test_every_spelling_of_a_username_shares_its_ten_failures(user, spelling: str) -> None:
    client = Client()
    for _ in range(10):
        client.post("/accounts/login/", {"username": "reviewer", "password": "no"})

    # Fullwidth letters are the same account to the login form (NFKC): the right password
    # would let a guesser in had these spellings been counted apart.
    again = client.post(
        "/accounts/login/", {"username": spelling, "password": "correct horse battery"}
    )

    assert again.status_code == 429
