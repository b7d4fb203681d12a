"""The access matrix, generated from the URL configuration so no route can be forgotten.

Every route is classified below; a new route without a class fails
`test_every_route_has_an_access_rule`. Each class says what an anonymous visitor, a
logged-in teammate, a share-link holder and an API token get.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from accounts.models import ApiToken, ShareLink
from accounts.sharing import share_view
from grading.campaigns.models import Campaign
from runs.importing import import_workspace
from runs.models import AssertionResult, Run, TriggerIteration, TriggerQuery

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SKILL = "taming-flaky-tests"
OTHER_SKILL = "changelog-from-commits"

#: Route name → (HTTP method, class). Classes:
#: page      a dashboard page or fragment: read-only, a share link may open it
#: reader    a page for account holders only (never through a share link)
#: form      a POST that changes something: account holders, with a CSRF token
#: staff     a page (GET) or form (POST) for staff only: 403 for other account holders
#: login, logout, share-opener: the ways in and out
#: api-read / api-write: the JSON API (401 without credentials)
#: api-docs  the API's documentation (like a reader page); api-home: ninja's root, empty
RULES: dict[str, tuple[str, str]] = {
    "runs:overview": ("GET", "page"),
    "runs:skill": ("GET", "page"),
    "runs:compare": ("GET", "page"),
    "runs:iteration": ("GET", "page"),
    "runs:benchmark": ("GET", "page"),
    "runs:matrix_export": ("GET", "page"),
    "runs:runs_export": ("GET", "page"),
    "runs:eval_export": ("GET", "page"),
    "runs:trend_export": ("GET", "page"),
    "runs:assertion_classes": ("GET", "page"),
    "runs:flaky": ("GET", "page"),
    "runs:eval": ("GET", "page"),
    "runs:run": ("GET", "page"),
    "runs:conversation": ("GET", "page"),
    "runs:event_result": ("GET", "page"),
    "runs:cell": ("GET", "page"),
    "runs:diff": ("GET", "page"),
    "runs:eval_history": ("GET", "page"),
    "runs:axes": ("GET", "page"),
    "runs:trigger": ("GET", "page"),
    "runs:trigger-compare": ("GET", "page"),
    "search:site": ("GET", "page"),
    "search:skill": ("GET", "page"),
    "campaigns:campaign": ("GET", "page"),
    "grading:queue": ("GET", "reader"),
    "import": ("GET", "reader"),
    "grading:note": ("POST", "form"),
    "grading:override": ("POST", "form"),
    "alerts:skill": ("GET", "staff"),
    "alerts:add": ("POST", "staff"),
    "alerts:remove": ("POST", "staff"),
    "alerts:test": ("POST", "staff"),
    "accounts:account": ("GET", "reader"),
    "accounts:password_change": ("GET", "reader"),
    "accounts:password_change_done": ("GET", "reader"),
    "accounts:create_token": ("POST", "form"),
    "accounts:revoke_token": ("POST", "form"),
    "accounts:create_share": ("POST", "form"),
    "accounts:revoke_share": ("POST", "form"),
    "accounts:login": ("GET", "login"),
    "accounts:logout": ("POST", "logout"),
    "share": ("GET", "share-opener"),
    # ninja's API root: a redirect to the docs with DEBUG on, a 404 otherwise; nothing to read.
    "api:api-root": ("GET", "api-home"),
    "api:openapi-json": ("GET", "api-docs"),
    "api:openapi-view": ("GET", "api-docs"),
    "api:list_skills": ("GET", "api-read"),
    "api:get_skill_detail": ("GET", "api-read"),
    "api:trends": ("GET", "api-read"),
    "api:list_iterations": ("GET", "api-read"),
    "api:iteration_detail": ("GET", "api-read"),
    "api:benchmark": ("GET", "api-read"),
    "api:iteration_summary": ("GET", "api-read"),
    "api:iteration_junit": ("GET", "api-read"),
    "api:list_runs": ("GET", "api-read"),
    "api:run_detail": ("GET", "api-read"),
    "api:compare_iterations": ("GET", "api-read"),
    "api:compare_many_iterations": ("GET", "api-read"),
    "api:eval_history": ("GET", "api-read"),
    "api:axes": ("GET", "api-read"),
    "api:trigger_iterations": ("GET", "api-read"),
    "api:trigger_iteration": ("GET", "api-read"),
    "api:trigger_compare": ("GET", "api-read"),
    "api:trend_export": ("GET", "api-read"),
    "api:matrix_export": ("GET", "api-read"),
    "api:runs_export": ("GET", "api-read"),
    "api:eval_export": ("GET", "api-read"),
    "api:search_everything": ("GET", "api-read"),
    "api:search_skill": ("GET", "api-read"),
    "api:create_import": ("POST", "api-write"),
    "api:create_import_from_files": ("POST", "api-write"),
    "api:create_review": ("POST", "api-write"),
}


def routes() -> Iterator[tuple[str, str]]:
    """(namespaced name, route) of every URL pattern outside the admin."""

    def walk(patterns: list, prefix: str, namespace: str | None) -> Iterator[tuple[str, str]]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = pattern.namespace or namespace
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
            elif isinstance(pattern, URLPattern):
                name = f"{namespace}:{pattern.name}" if namespace else pattern.name
                yield name, prefix + str(pattern.pattern)

    for name, route in walk(get_resolver().url_patterns, "", None):
        if not (name or "").startswith("admin:"):
            yield name, route


@dataclass
class World:
    run: Run
    result: AssertionResult
    token: ApiToken
    token_secret: str
    link: ShareLink
    link_secret: str
    campaign: Campaign

    def kwargs(self) -> dict[str, object]:
        return {
            "skill": SKILL,
            "number": self.run.iteration.number,
            "eval_id": self.run.eval_id,
            "condition": self.run.condition.name,
            "run": self.run.run_index,
            "result": self.result.pk,
            "pk": self.token.pk,
            "token": self.link_secret,
            "fmt": "csv",
            "ordinal": next(
                e["ordinal"]
                for e in self.run.conversation or self.run.tool_invocations
                if "result" in e
            ),
        }

    def url(self, name: str) -> str:
        route = dict(routes())[name]
        kwargs = {
            key: value
            for key, value in self.kwargs().items()
            if f"<{key}>" in route or re.search(rf"<\w+:{key}>", route)
        }
        url = reverse(name, kwargs=kwargs)
        if name in {"runs:compare", "api:compare_iterations"}:
            url += f"?a=1&b={self.run.iteration.number}"
        if name == "api:compare_many_iterations":
            url += f"?iterations=1,{self.run.iteration.number}"
        if name == "api:trigger_compare":
            url += "?a=1&b=2"
        if name == "api:trigger_iteration":
            url = reverse(name, kwargs={"skill": SKILL, "number": 1})
        if name == "runs:trigger-compare":
            url += f"?a={self.run.iteration.number}&b={self.run.iteration.number}"
        if name == "accounts:revoke_share":
            url = reverse(name, kwargs={"pk": self.link.pk})
        if name == "campaigns:campaign":
            url = reverse(name, kwargs={"pk": self.campaign.pk})
        if name == "runs:diff":
            run = f"{self.run.condition.name}/{self.run.run_index}"
            url += f"?a={run}&b={run}"
        if name.startswith("api:search"):
            url += "?q=total"
        return url


@pytest.fixture
def world(user) -> World:
    import_workspace([ROOT / "runs" / "sample"])
    run = (
        Run.objects.filter(iteration__skill__name=SKILL, grading__results__is_meta=False)
        .select_related("iteration__skill", "condition")
        .order_by("-iteration__number", "eval_id", "run_index")
        .first()
    )
    result = run.grading.results.filter(is_meta=False).first()
    # A trigger iteration numbered as the shared iteration: an iteration link must not open it.
    trigger = TriggerIteration.objects.create(
        skill=run.iteration.skill,
        number=run.iteration.number,
        label="trigger-results.json",
        source_key="trigger-results.json",
        source_format="run_eval",
        description="Use when a test is flaky.",
        content_hash="0" * 64,
    )
    TriggerQuery.objects.create(
        iteration=trigger,
        position=0,
        query="fix my flaky test",
        should_trigger=True,
        triggers=2,
        runs=3,
    )
    token = ApiToken(user=user, name="CI")
    token_secret = token.set_secret()
    token.save()
    created = share_view(
        creator=user, address=reverse("runs:iteration", args=[SKILL, run.iteration.number])
    )
    campaign = Campaign.objects.create(requested_by="runevals pid 1 on ci")
    return World(run, result, token, token_secret, created.link, created.secret, campaign)


def request(client: Client, method: str, url: str, **extra: object):
    data = {
        "text": "looked at it",
        "verdict": "pass",
        "reason": "the judge misread",
        "name": "n",
        "path": f"/skills/{SKILL}/",
    }
    if method == "GET":
        return client.get(url, **extra)
    return client.post(url, data, **extra)


def is_login_redirect(response) -> bool:
    return response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_every_route_has_an_access_rule() -> None:
    unclassified = sorted(name or route for name, route in routes() if name not in RULES)
    assert not unclassified, f"add these routes to RULES: {unclassified}"


def test_anonymous_visitors_are_sent_to_log_in_or_get_401(world: World) -> None:
    client = Client()
    for name, (method, kind) in RULES.items():
        response = request(client, method, world.url(name))
        if kind == "api-home":
            assert response.status_code in {302, 404}
        elif kind in {"page", "reader", "form", "staff", "api-docs"}:
            assert is_login_redirect(response), (name, response.status_code)
        elif kind in {"api-read", "api-write"}:
            assert response.status_code == 401, (name, response.status_code)
            assert response.json()["detail"].startswith("authentication required")
        elif kind == "login":
            assert response.status_code == 200
        elif kind in {"logout", "share-opener"}:
            assert response.status_code == 302, name


def test_a_teammate_with_an_account_reaches_everything(world: World, client: Client) -> None:
    for name, (method, kind) in RULES.items():
        if kind in {"logout", "share-opener", "api-write", "api-home"}:
            continue
        response = request(client, method, world.url(name))
        if kind == "form":
            assert response.status_code in {200, 302}, (name, response.status_code)
            assert not is_login_redirect(response), name
        elif kind == "login":
            assert response.status_code == 302  # already logged in
        elif kind == "staff":
            assert response.status_code == 403, (name, response.status_code)
        else:
            assert response.status_code == 200, (name, response.status_code)


def test_a_share_link_opens_its_view_and_the_views_beneath_only(world: World) -> None:
    client = Client()
    opened = client.get(world.url("share"))
    assert opened.status_code == 302
    assert opened["Location"] == world.link.path

    inside = {
        "runs:iteration",
        "runs:benchmark",
        "runs:matrix_export",
        "runs:runs_export",
        "runs:eval_export",
        "runs:assertion_classes",
        "runs:flaky",
        "runs:eval",
        "runs:run",
        "runs:conversation",
        "runs:event_result",
        "runs:cell",
        "runs:diff",
    }
    for name, (method, kind) in RULES.items():
        if kind in {"login", "logout", "share-opener", "api-home"}:
            continue
        response = request(client, method, world.url(name))
        if name in inside:
            assert response.status_code == 200, (name, response.status_code)
        elif kind.startswith("api") and kind != "api-docs":
            assert response.status_code == 401, name
        else:
            assert is_login_redirect(response), (name, response.status_code)


def test_a_share_link_never_opens_another_skill(world: World) -> None:
    client = Client()
    client.get(world.url("share"))
    other = (
        Run.objects.filter(iteration__skill__name=OTHER_SKILL)
        .select_related("iteration", "condition")
        .first()
    )
    for url in (
        reverse("runs:skill", args=[OTHER_SKILL]),
        reverse("runs:iteration", args=[OTHER_SKILL, other.iteration.number]),
        reverse(
            "runs:run",
            args=[
                OTHER_SKILL,
                other.iteration.number,
                other.eval_id,
                other.condition.name,
                other.run_index,
            ],
        ),
        reverse("runs:iteration", args=[SKILL, world.run.iteration.number - 1]),
        "/admin/",
    ):
        response = client.get(url)
        assert response.status_code == 302, url
        assert "login" in response["Location"], url


def test_a_shared_page_has_no_forms_and_says_it_is_shared(world: World) -> None:
    client = Client()
    client.get(world.url("share"))
    html = client.get(world.url("runs:run")).content.decode()
    assert "shared view" in html
    assert "<form" not in html


@pytest.mark.parametrize("state", ["expired", "revoked", "wrong"])
def test_an_expired_revoked_or_wrong_share_link_is_refused(world: World, state: str) -> None:
    client = Client()
    secret = world.link_secret
    if state == "expired":
        ShareLink.objects.filter(pk=world.link.pk).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
    elif state == "revoked":
        world.link.revoke()
    else:
        secret = secret[:-2] + ("AA" if not secret.endswith("AA") else "BB")
    response = client.get(reverse("share", args=[secret]))
    assert response.status_code == 404
    assert "does not work" in response.content.decode()
    assert is_login_redirect(client.get(world.url("runs:iteration")))


def test_revoking_a_link_closes_it_for_a_browser_that_already_opened_it(world: World) -> None:
    client = Client()
    client.get(world.url("share"))
    assert client.get(world.url("runs:iteration")).status_code == 200
    world.link.revoke()
    assert is_login_redirect(client.get(world.url("runs:iteration")))


def test_api_reads_and_writes_with_a_token(world: World) -> None:
    client = Client(headers={"Authorization": f"Bearer {world.token_secret}"})
    for name, (_, kind) in RULES.items():
        if kind == "api-read":
            response = client.get(world.url(name))
            assert response.status_code == 200, (name, response.status_code, response.content[:300])
    response = client.post(
        world.url("api:create_review"), {"text": "a note from CI"}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    world.token.refresh_from_db()
    assert world.token.last_used_at is not None


@pytest.mark.parametrize("state", ["revoked", "expired", "wrong"])
def test_a_revoked_expired_or_wrong_api_token_gets_401(world: World, state: str) -> None:
    secret = world.token_secret
    if state == "revoked":
        world.token.revoke()
    elif state == "expired":
        ApiToken.objects.filter(pk=world.token.pk).update(expires_at=timezone.now())
    else:
        secret = "not-" + secret
    client = Client(headers={"Authorization": f"Bearer {secret}"})
    assert client.get("/api/skills").status_code == 401
    assert (
        client.post(
            world.url("api:create_review"), {"text": "x"}, content_type="application/json"
        ).status_code
        == 401
    )


def test_every_form_needs_its_csrf_token(world: World, user) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    for name, (method, kind) in RULES.items():
        if kind in {"form", "logout"}:
            assert request(client, method, world.url(name)).status_code == 403, name


def test_session_api_writes_need_the_csrf_token(world: World, user) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    url = world.url("api:create_review")
    refused = client.post(url, {"text": "note"}, content_type="application/json")
    assert refused.status_code == 403
    client.get("/accounts/")  # sets the CSRF cookie, as a page would
    token = client.cookies["csrftoken"].value
    allowed = client.post(
        url, {"text": "note"}, content_type="application/json", headers={"X-CSRFToken": token}
    )
    assert allowed.status_code == 201, allowed.content


def test_public_read_opens_pages_and_api_reads_but_not_writes(world: World, settings) -> None:
    settings.EVALSITE_PUBLIC_READ = True
    client = Client()
    assert client.get("/").status_code == 200
    assert client.get(world.url("runs:run")).status_code == 200
    assert client.get("/api/skills").status_code == 200
    assert "<form" not in client.get(world.url("runs:run")).content.decode().split("<main>")[1]
    assert is_login_redirect(request(client, "POST", world.url("grading:note")))
    assert (
        client.post(
            world.url("api:create_review"), {"text": "x"}, content_type="application/json"
        ).status_code
        == 401
    )
    assert is_login_redirect(client.get("/accounts/"))
