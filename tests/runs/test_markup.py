"""Markdown as agents write it, rendered and sanitised: nothing they write becomes markup."""

from __future__ import annotations

import re

import pytest

from runs.markup import link_ordinals, markdown_block, render_markdown
from tests.hostile import HOSTILE, PAYLOADS, unsafe_markup


def test_it_renders_emphasis_code_and_lists() -> None:
    html = render_markdown("**bold**, `code` and\n\n- one\n- two")

    assert "<strong>bold</strong>" in html and "<code>code</code>" in html
    assert "<li>one</li>" in html


def test_fenced_code_is_highlighted_and_stays_text() -> None:
    html = render_markdown("```python\ndef f():\n    return '<b>'\n```")

    assert '<pre class="highlight">' in html and '<span class="k">def</span>' in html
    assert "&lt;b&gt;" in html and "<b>" not in html


def test_http_links_carry_rel_and_other_schemes_stay_text() -> None:
    html = render_markdown("[docs](https://example.com/a) [x](javascript:alert(1)) <data:x>")

    assert 'href="https://example.com/a"' in html
    assert 'rel="noopener noreferrer nofollow"' in html
    assert "javascript:" not in re.findall(r'href="([^"]*)"', html)[0]
    assert html.count("<a ") == 1


def test_images_are_named_never_fetched() -> None:
    html = render_markdown("![pixel](https://tracker.example/p.png)")

    assert "<img" not in html
    assert "[image: pixel — https://tracker.example/p.png]" in html


@pytest.mark.parametrize("payload", PAYLOADS)
def test_no_payload_becomes_markup(payload: str) -> None:
    html = str(render_markdown(payload)) + str(render_markdown(f"text\n\n{payload}\n\nmore"))

    assert unsafe_markup(html) == []
    assert "<div" not in html  # a raw HTML block is text


def test_the_raw_toggle_holds_the_text_as_written() -> None:
    html = markdown_block(HOSTILE)

    assert '<details class="md-source">' in html
    assert "&lt;script&gt;alert(&#x27;script&#x27;)&lt;/script&gt;" in html
    assert "<script" not in html


def test_plain_prose_takes_the_fast_path_with_the_same_output() -> None:
    text = "The agent ran the tests\nand they passed."

    assert render_markdown(text) == "<p>The agent ran the tests<br>\nand they passed.</p>"


def test_evidence_ordinals_link_to_their_event() -> None:
    html = link_ordinals("matched ordinal 5: Bash <rm -rf>", "/run/")

    assert html == (
        'matched ordinal <a class="ordinal-link" href="/run/#event-5">5</a>: Bash &lt;rm -rf&gt;'
    )
