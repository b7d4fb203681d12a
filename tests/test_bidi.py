"""Bidirectional controls an agent wrote are shown by name on every page, never obeyed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.http import HttpResponse, JsonResponse
from django.test import Client, RequestFactory

from evalsite.bidi import VisibleBidiControlsMiddleware, visible_controls
from runs.importing import import_workspace
from runs.names import BIDI_CONTROLS
from tests.hostile import hostile_workspace

ITERATION = "/skills/hostile-skill/iterations/1/"
RUN = f"{ITERATION}evals/alpha/with_skill/1/"


def raw_controls(text: str) -> set[str]:
    return {f"U+{ord(char):04X}" for char in text if char in BIDI_CONTROLS}


@pytest.fixture
def hostile(db: None, tmp_path: Path) -> None:
    import_workspace([hostile_workspace(tmp_path)])


PAGES = {
    "run page": (RUN, {}, False),
    "transcript": (f"{RUN}conversation/", {}, True),
    "eval page": (f"{ITERATION}evals/alpha/", {}, False),
    "matrix cell": (f"{ITERATION}cells/alpha/with_skill/", {}, True),
    "diff": (f"{ITERATION}evals/alpha/diff/", {"a": "with_skill/1", "b": "without_skill/1"}, False),
    "search": ("/search/", {"q": "admins only"}, False),
}


@pytest.mark.parametrize("name", PAGES)
def test_agent_bidi_controls_are_shown_by_name_on_the_page(
    hostile: None, client: Client, name: str
) -> None:
    url, query, htmx = PAGES[name]
    headers = {"HX-Request": "true"} if htmx else {}
    response = client.get(url, query, headers=headers)
    html = response.content.decode()

    assert response.status_code == 200
    assert raw_controls(html) == set()
    assert "&lt;U+202E&gt;" in html and "&lt;U+2066&gt;" in html
    assert int(response["Content-Length"]) == len(response.content)


def test_the_diff_names_the_controls_in_a_patched_file_name(hostile: None, client: Client) -> None:
    html = client.get(
        f"{ITERATION}evals/alpha/diff/", {"a": "with_skill/1", "b": "without_skill/1"}
    ).content.decode()

    assert "+++ b/run&lt;U+202E&gt;hs.txt" in html
    assert "&lt;U+2066&gt;# &lt;U+202E&gt;rm -rf /&lt;U+2069&gt;" in html


def test_a_tool_result_shown_as_plain_text_names_them_unescaped(
    hostile: None, client: Client
) -> None:
    response = client.get(f"{RUN}conversation/1/result/")

    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert raw_controls(text) == set()
    assert "<U+202E> } <U+2066>if (is_admin)<U+2069>" in text


def test_the_api_keeps_the_text_as_the_agent_wrote_it(hostile: None, client: Client) -> None:
    response = client.get("/api/skills/hostile-skill/iterations/1/runs/alpha/with_skill/1")

    assert response.status_code == 200
    assert "\u202e" in json.dumps(response.json(), ensure_ascii=False)


def test_each_control_is_named_and_nothing_else_changes() -> None:
    text = "a\u202ab\u202bc\u202cd\u202de\u202ef\u2066g\u2067h\u2068i\u2069j \u200f\u061c — …"

    shown = visible_controls(text.encode(), html=False).decode()
    escaped = visible_controls(text.encode(), html=True).decode()

    assert shown == (
        "a<U+202A>b<U+202B>c<U+202C>d<U+202D>e<U+202E>f<U+2066>g<U+2067>h<U+2068>i<U+2069>j"
        " \u200f\u061c — …"
    )
    assert escaped == shown.replace("<", "&lt;").replace(">", "&gt;")


def test_the_middleware_leaves_json_and_unmarked_pages_as_they_are() -> None:
    request = RequestFactory().get("/")
    payload = {"text": "\u202e"}
    plain_page = HttpResponse("<p>nothing to name — ok</p>")

    json_response = VisibleBidiControlsMiddleware(lambda _: JsonResponse(payload))(request)
    page = VisibleBidiControlsMiddleware(lambda _: plain_page)(request)

    assert json.loads(json_response.content) == payload
    assert page is plain_page and page.content.decode() == "<p>nothing to name — ok</p>"
