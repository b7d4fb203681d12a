"""Names: what a skill name, eval id or condition name may be, and that every valid one works
on every page, in every link, share link and API path (issue #10 §1)."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlencode, urlsplit

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import Client
from django.urls import resolve, reverse
from django.utils.html import escape

from runs.importing import import_workspace
from runs.models import Condition, EvalCase, Iteration, Run, Skill
from runs.names import (
    CONDITION_NAME_MAX,
    EVAL_ID_MAX,
    SKILL_NAME_MAX,
    InvalidName,
    validate_condition_name,
    validate_eval_id,
    validate_skill_name,
)
from tests.factories import eval_magic_iteration

#: Names Claude Code would load, each hostile to some layer: encoding, HTML, query strings.
SKILL_NAMES = [
    "café-helper",
    "my skill",
    "日本語スキル",
    "emoji 🚀 skill",
    "plugin:skill",
    "a%2Fb",  # a literal percent sign: must not be decoded twice
    "100% real",
    "a?b#c",
    '<img src=x onerror="alert(1)">',
    "it's & co",
]
EVAL_IDS = ["eval 1", "ü", "a%20b"]
#: Roles: treatment, control, and a third ("other") whose name needs encoding everywhere.
CONDITIONS = ["with_skill", "without_skill", "über cond #%"]


# --- the validators ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", [*SKILL_NAMES, "Ω", "👨\u200d👩\u200d👧 family", "x" * SKILL_NAME_MAX, "<script>"]
)
def test_a_name_claude_code_would_load_is_kept_as_written(name: str) -> None:
    assert validate_skill_name(name) == name


def test_surrounding_whitespace_is_stripped_and_nothing_is_normalised() -> None:
    assert validate_skill_name("  my skill\u3000") == "my skill"
    decomposed = "cafe\u0301"  # how macOS spells café in a file name
    assert validate_skill_name(decomposed) == decomposed


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("a/b", "contains '/'"),
        ("<script>alert(1)</script>", "contains '/'"),
        ("a\\b", "contains a backslash"),
        ("a\x00b", "contains a control character (U+0000)"),
        ("two\nlines", "contains a control character (U+000A)"),
        ("x\x7f", "contains a control character (U+007F)"),
        ("x\x85", "contains a control character (U+0085)"),
        ("a\u2028b", "contains a line separator (U+2028)"),
        ("safe\u202etxt.exe", "contains a bidirectional override (U+202E)"),
        ("caf\udce9", "contains an unpaired surrogate (U+DCE9)"),
        ("", "is empty"),
        (" \t ", "contains a control character (U+0009)"),
        ("   ", "is only whitespace"),
        (".", "is '.' or '..'"),
        (" .. ", "is '.' or '..'"),
        ("x" * (SKILL_NAME_MAX + 1), f"is longer than {SKILL_NAME_MAX} characters"),
    ],
)
def test_a_name_that_cannot_be_one_is_refused_with_its_reason(value: str, reason: str) -> None:
    with pytest.raises(InvalidName) as raised:
        validate_skill_name(value)

    assert raised.value.reason == reason
    message = str(raised.value)
    assert message.startswith("skill name ") and message.endswith(reason)
    assert "\n" not in message and len(message) < 140  # one line, a long name cut short
    assert isinstance(raised.value, ValueError)


def test_each_kind_has_its_own_limit_and_says_which_it_is() -> None:
    assert validate_eval_id("e" * EVAL_ID_MAX) == "e" * EVAL_ID_MAX
    assert validate_condition_name("c" * CONDITION_NAME_MAX) == "c" * CONDITION_NAME_MAX
    with pytest.raises(InvalidName, match=r"^condition name 'c+…' is longer than 100 "):
        validate_condition_name("c" * (CONDITION_NAME_MAX + 1))
    with pytest.raises(InvalidName, match=r"^eval id 'a/b' contains '/'$"):
        validate_eval_id("a/b")
    with pytest.raises(InvalidName, match=r"^eval id 3 is not text but int$"):
        validate_eval_id(3)  # type: ignore[arg-type]


def test_the_limits_are_the_model_fields() -> None:
    assert Skill._meta.get_field("name").max_length == SKILL_NAME_MAX
    assert EvalCase._meta.get_field("eval_id").max_length == EVAL_ID_MAX
    assert Run._meta.get_field("eval_id").max_length == EVAL_ID_MAX
    assert Condition._meta.get_field("name").max_length == CONDITION_NAME_MAX


@pytest.mark.django_db
def test_the_admin_and_full_clean_refuse_what_the_importer_would() -> None:
    Skill(name="café-helper").full_clean()
    for name, message in (
        ("a/b", "This skill name contains '/'."),
        (" padded", "This name begins or ends with whitespace."),
    ):
        with pytest.raises(ValidationError) as raised:
            Skill(name=name).full_clean()
        assert raised.value.message_dict["name"] == [message]


# --- every page, link, share link and API path ---------------------------------------------


def import_hostile_skill(root: Path, skill: str) -> None:
    """Two iterations of `skill`: every eval under every condition, one graded run each."""
    for number in (1, 2):
        cells = {
            (eval_id, condition): [{"a1": (i + number) % 2 == 0, "a2": True}]
            for i, eval_id in enumerate(EVAL_IDS)
            for condition in CONDITIONS
        }
        eval_magic_iteration(
            root,
            skill=skill,
            label=f"iteration-{number}",
            timestamp=f"2026-05-0{number}T10:00:00Z",
            cells=cells,
            conditions=CONDITIONS,
        )
    import_workspace([root])


#: Links a visitor follows: hrefs and htmx GETs (forms that POST are not links).
LINK = re.compile(r'(?:href|hx-get)="(/[^"]*)"')


def crawl(client: Client, start: str, prefix: str) -> dict[str, str]:
    """Every page reachable from `start` by links under `prefix`: address → body."""
    seen: dict[str, str] = {}
    queue = [start]
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        response = client.get(url)
        if response.status_code == 302:
            # A page that picks its state for you (compare: the latest two) redirects to an
            # address that says so; it must be one of the skill's, correctly encoded.
            assert response["Location"].startswith(prefix), (url, response["Location"])
            queue.append(response["Location"])
            seen[url] = ""
            continue
        assert response.status_code == 200, (url, response.status_code)
        # A CSV download streams: read to its end, so a row that fails fails here.
        content = b"".join(response.streaming_content) if response.streaming else response.content
        seen[url] = body = content.decode()
        links = (unescape(link).partition("#")[0] for link in LINK.findall(body))
        queue += [link for link in links if link.startswith(prefix)]
    return seen


def url_name(url: str) -> str:
    return resolve(unquote(urlsplit(url).path)).url_name


@pytest.mark.django_db
@pytest.mark.parametrize("name", SKILL_NAMES)
def test_every_page_of_a_hostile_name_answers_and_shows_it_escaped(
    client: Client, tmp_path: Path, name: str
) -> None:
    import_hostile_skill(tmp_path, name)
    skill_url = reverse("runs:skill", args=[name])
    overview = client.get("/").content.decode()
    assert f'href="{escape(skill_url)}"' in overview

    pages = crawl(client, skill_url, skill_url)
    compare = f"{skill_url}compare/?" + urlencode({"a": 2, "b": 2, "ca": CONDITIONS[2]})
    pages |= crawl(client, compare, compare)

    kinds = {url_name(url) for url in pages}
    assert kinds >= {"skill", "compare", "iteration", "benchmark", "eval", "run", "conversation"}
    for url, body in pages.items():
        if body.lstrip().startswith("<!doctype html>"):
            assert escape(name) in body, url
            assert "<img src=x" not in body, url
    assert len([url for url in pages if url_name(url) == "run"]) == 2 * len(EVAL_IDS) * 3
    # The compare page's choice of condition came back as chosen, so the query round-tripped.
    assert f'<option value="{escape(CONDITIONS[2])}" selected>' in pages[compare]


def share_link(client: Client, url: str) -> str:
    """Share `url` as the Share button does: post the form's own path, read the new link."""
    html = client.get(url).content.decode()
    path = unescape(re.search(r'name="path" value="([^"]*)"', html).group(1))
    created = client.post(reverse("accounts:create_share"), {"path": path, "expires": "7"})
    assert created.status_code == 200, (url, created.content.decode()[-400:])
    return unescape(re.search(r"data-secret>([^<]+)</pre>", created.content.decode()).group(1))


@pytest.mark.django_db
@pytest.mark.parametrize("name", SKILL_NAMES)
def test_every_view_of_a_hostile_name_can_be_shared_and_opened(
    client: Client, tmp_path: Path, name: str
) -> None:
    import_hostile_skill(tmp_path, name)
    eval_id, condition = EVAL_IDS[0], CONDITIONS[2]
    views = {
        "skill": reverse("runs:skill", args=[name]),
        "iteration": reverse("runs:iteration", args=[name, 2]) + "?only=failures",
        "compare": reverse("runs:compare", args=[name])
        + "?"
        + urlencode({"a": 1, "b": 2, "ca": condition, "cb": condition}),
        "eval": reverse("runs:eval", args=[name, 2, eval_id]),
        "run": reverse("runs:run", args=[name, 2, eval_id, condition, 1]),
    }
    for kind, url in views.items():
        link = share_link(client, url)
        outsider = Client()
        opened = outsider.get(link, follow=True)

        assert opened.status_code == 200, (kind, opened.redirect_chain)
        assert opened.redirect_chain[-1][0] == url, kind
        body = opened.content.decode()
        assert "shared view" in body and escape(name) in body, kind
        if kind == "iteration":  # and the views beneath it
            beneath = reverse("runs:run", args=[name, 2, EVAL_IDS[1], condition, 1])
            assert outsider.get(beneath).status_code == 200


@pytest.mark.django_db
def test_the_longest_name_can_be_shared(client: Client) -> None:
    # Percent-encoded, 200 emoji are 2,400 characters of address: more than the 1,000 the
    # share form and ShareLink.path allowed.
    name = "🚀" * SKILL_NAME_MAX
    Skill.objects.create(name=name)
    url = reverse("runs:skill", args=[name])

    opened = Client().get(share_link(client, url), follow=True)

    assert opened.status_code == 200 and opened.redirect_chain[-1][0] == url


def api_get(api: Client, url: str, status: int = 200):
    response = api.get(url)
    assert response.status_code == status, (url, response.content[:400])
    return response.json()


@pytest.mark.django_db
@pytest.mark.parametrize("name", SKILL_NAMES)
def test_every_api_read_path_takes_a_percent_encoded_hostile_name(
    api: Client, client: Client, tmp_path: Path, name: str
) -> None:
    import_hostile_skill(tmp_path, name)
    skill = f"/api/skills/{quote(name, safe='')}"
    eval_id, condition = quote(EVAL_IDS[2], safe=""), quote(CONDITIONS[2], safe="")

    listed = api_get(api, "/api/skills")["items"]
    assert [item["name"] for item in listed] == [name]
    assert listed[0]["url"] == reverse("runs:skill", args=[name])
    assert api_get(api, skill)["name"] == name
    assert len(api_get(api, f"{skill}/trends")) == 2
    assert api_get(api, f"{skill}/iterations")["count"] == 2
    iteration = api_get(api, f"{skill}/iterations/2")
    assert sorted(iteration["evals"]) == sorted(EVAL_IDS)
    api_get(api, f"{skill}/iterations/2/benchmark")
    runs = api_get(api, f"{skill}/iterations/2/runs?eval_id={eval_id}&condition={condition}")
    assert [(r["eval_id"], r["condition"]) for r in runs["items"]] == [(EVAL_IDS[2], CONDITIONS[2])]
    run = api_get(api, f"{skill}/iterations/2/runs/{eval_id}/{condition}/1")
    assert (run["eval_id"], run["condition"]) == (EVAL_IDS[2], CONDITIONS[2])
    compared = api_get(api, f"{skill}/compare?a=1&b=2&ca={condition}&cb={condition}")
    assert compared["before"] == 1

    # Every address the API hands out opens the page it names.
    for url in (listed[0]["url"], iteration["url"], run["url"], runs["items"][0]["url"]):
        assert client.get(url).status_code == 200, url


# --- rows stored before names were validated -----------------------------------------------


@pytest.mark.django_db
def test_a_name_no_address_can_hold_leaves_the_overview_and_api_listing_working(
    api: Client, client: Client, tmp_path: Path
) -> None:
    import_hostile_skill(tmp_path / "a", "fine")
    import_hostile_skill(tmp_path / "b", "legacy")
    # As an import before validation existed could have stored them (the 500 for everyone).
    Skill.objects.filter(name="legacy").update(name="legacy/skill")
    fine = Iteration.objects.get(skill__name="fine", number=2)
    Run.objects.filter(iteration=fine, eval_id="ü").update(eval_id="x/y")
    EvalCase.objects.filter(skill__name="fine", eval_id="ü").update(eval_id="x/y")

    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        response = client.get("/", **headers)
        assert response.status_code == 200
        html = response.content.decode()
        assert "<strong>legacy/skill</strong>" in html and "no page: rename it" in html
        assert f'href="{reverse("runs:skill", args=["fine"])}"' in html

    listed = {item["name"]: item for item in api_get(api, "/api/skills")["items"]}
    assert listed["legacy/skill"]["url"] is None
    assert listed["legacy/skill"]["latest"]["url"] is None
    assert listed["fine"]["url"] == reverse("runs:skill", args=["fine"])

    runs = api_get(api, "/api/skills/fine/iterations/2/runs?eval_id=x/y")["items"]
    assert runs and all(run["url"] is None for run in runs)
    compare = reverse("runs:compare", args=["fine"]) + "?a=1&b=2"
    response = client.get(compare)
    assert response.status_code == 200 and "x/y" in response.content.decode()


@pytest.mark.django_db
def test_a_nul_in_an_address_is_not_found_without_reaching_the_database(
    api: Client, client: Client, tmp_path: Path
) -> None:
    # PostgreSQL raises on a NUL in a query parameter: a 500 where "not found" is the answer.
    import_hostile_skill(tmp_path, "fine")
    sent: list[object] = []

    def record(
        execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
    ) -> Any:
        sent.extend(params or ())
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        assert client.get("/skills/a%00b/").status_code == 404
        assert client.get("/skills/fine/iterations/2/evals/a%00b/").status_code == 404
        run = "/skills/fine/iterations/2/evals/ü/with_skill%00/1/"
        assert client.get(run).status_code == 404
        api_get(api, "/api/skills/a%00b", status=404)
        api_get(api, "/api/skills/fine/iterations/2/runs/a%00b/with_skill/1", status=404)
        assert api_get(api, "/api/skills/fine/iterations/2/runs?eval_id=a%00b")["count"] == 0
        api_get(api, "/api/skills/fine/compare?a=1&b=2&ca=x%00", status=404)
    assert sent and not [value for value in sent if "\x00" in str(value)]
