"""A visitor without an account cannot make the site read, parse or spool a large body."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.middleware import ANONYMOUS_BODY_LIMIT

pytestmark = pytest.mark.django_db

BOUNDARY = "evalsite-test-boundary"
#: What a 700 MB upload announces, scaled down: far above the limit, and above the size
#: Django parses in memory (FILE_UPLOAD_MAX_MEMORY_SIZE), so it would be spooled to disk.
ANNOUNCED = 8 * 1024 * 1024


class UnreadBody:
    """A request body (`wsgi.input`) that fails the test if anything reads a byte of it."""

    def read(self, size: int = -1) -> bytes:
        raise AssertionError("the body of a refused request was read")

    readline = read


def post_unread(client: Client, url: str, **headers: str):
    return client.post(
        url,
        content_type=f"multipart/form-data; boundary={BOUNDARY}",
        CONTENT_LENGTH=str(ANNOUNCED),
        **{"wsgi.input": UnreadBody()},
        **headers,
    )


@pytest.fixture
def anonymous() -> Client:
    """A visitor holding a csrftoken cookie, which is all CsrfViewMiddleware needs to go and
    read the form's token from the body; CSRF checks on, as in production."""
    visitor = Client(enforce_csrf_checks=True)
    visitor.cookies["csrftoken"] = "a" * 32
    return visitor


def test_it_refuses_a_large_body_to_the_login_form_unread(anonymous: Client) -> None:
    response = post_unread(anonymous, "/accounts/login/")

    assert response.status_code == 413
    assert "Log in first" in response.content.decode()


def test_it_sends_an_anonymous_upload_to_the_login_page_unread(anonymous: Client) -> None:
    response = post_unread(anonymous, "/imports/")

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("headers", [{}, {"HTTP_AUTHORIZATION": "Bearer not-a-token"}])
def test_the_api_refuses_an_upload_without_a_valid_token_unread(
    anonymous: Client, headers: dict[str, str]
) -> None:
    response = post_unread(anonymous, "/api/imports", **headers)

    assert response.status_code == 401


def test_the_login_form_still_takes_a_small_body(user, anonymous: Client) -> None:
    login_page = anonymous.get("/accounts/login/")
    token = login_page.cookies["csrftoken"].value
    credentials = {
        "username": "reviewer",
        "password": "correct horse battery",
        "csrfmiddlewaretoken": token,
    }

    response = anonymous.post("/accounts/login/", credentials)  # multipart, as the client sends

    assert response.status_code == 302 and response["Location"] == "/"


def test_a_body_just_over_the_limit_is_refused_and_one_at_it_is_read(anonymous: Client) -> None:
    at_limit = "username=reviewer&password=no&pad="
    at_limit += "x" * (ANONYMOUS_BODY_LIMIT - len(at_limit))
    read = anonymous.post(
        "/accounts/login/", at_limit, content_type="application/x-www-form-urlencoded"
    )
    over = anonymous.post(
        "/accounts/login/", at_limit + "x", content_type="application/x-www-form-urlencoded"
    )

    assert read.status_code == 403  # read, and refused by CSRF: no form token in it
    assert over.status_code == 413
