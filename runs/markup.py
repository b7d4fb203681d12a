"""What agents and authors wrote, as HTML a browser may be given: Markdown, highlighted code,
and evidence whose ordinals link to the transcript.

Agent text is untrusted. markdown-it reads it with raw HTML turned off (an agent's `<script>`
or `<img onerror>` stays text), links are kept only when they are http(s), images are never
fetched (an image becomes a line of text naming its address), and nh3, an allow-list
sanitiser, cleans whatever markdown-it produced before the page sees it: a parser bug cannot
become script. Every link gets `rel="noopener noreferrer nofollow"`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import nh3
from django.core.cache import cache
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

#: Tags markdown-it emits for CommonMark plus tables and strikethrough, and Pygments' spans.
ALLOWED_TAGS = {
    "p", "br", "hr", "em", "strong", "s", "del", "code", "pre", "span", "div", "a",
    "blockquote", "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "span": {"class"},
    "div": {"class"},
    "pre": {"class"},
    "ol": {"start"},
}
LINK_REL = "noopener noreferrer nofollow"
SAFE_LINK = re.compile(r"^https?://", re.IGNORECASE)
#: Text this long is shown as it is: rendering a 1 MB paste is no help to anyone reading it.
MAX_RENDERED_CHARS = 200_000
#: Nothing in the text that Markdown would read as markup: escaping it is the whole job.
_PLAIN = re.compile(r"[\\`*_\[\]<>#|~!&]|(?:^|\n)(?: {4}|\t|\s*(?:[-+=]|\d+[.)]))|\n\n")

_FORMATTER = HtmlFormatter(nowrap=True)


def _highlighted(code: str, language: str, _attrs: str) -> str:
    """A fenced block's code as Pygments spans when its language is known, else ""."""
    try:
        lexer = get_lexer_by_name(language) if language else None
    except ClassNotFound:
        lexer = None
    if lexer is None:
        return ""  # markdown-it then escapes the code itself
    return f'<pre class="highlight"><code>{highlight(code, lexer, _FORMATTER)}</code></pre>'


def _image_as_text(renderer, tokens, idx, options, env) -> str:  # noqa: ANN001 (markdown-it's)
    token = tokens[idx]
    alt = "".join(child.content for child in token.children or [])
    return format_html('<span class="md-image">[image: {} — {}]</span>', alt, token.attrGet("src"))


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "highlight": _highlighted, "breaks": True})
    md.enable(["table", "strikethrough"])
    # A link markdown-it refuses stays text: `[x](javascript:…)` is shown, never followed.
    md.validateLink = lambda url: bool(SAFE_LINK.match(url.strip()))
    md.add_render_rule("image", _image_as_text)
    return md


def sanitise(html: str) -> SafeString:
    """HTML reduced to the allow-list, every link http(s) and rel="noopener noreferrer nofollow"."""
    cleaned = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https"},
        link_rel=LINK_REL,
        strip_comments=True,
    )
    return mark_safe(cleaned)  # noqa: S308 (nh3 has just reduced it to the allow-list)


def render_markdown(text: str | None) -> SafeString:
    """Markdown as sanitised HTML; raw HTML in it is shown as text."""
    text = text or ""
    if not text.strip():
        return mark_safe("")
    if len(text) > MAX_RENDERED_CHARS or not _PLAIN.search(text):
        # Plain prose (most of a transcript) needs no parser: the same output, 50x faster.
        paragraphs = escape(text).replace("\n", "<br>\n")
        return mark_safe(f"<p>{paragraphs}</p>")  # noqa: S308 (escaped above)
    return sanitise(_parser().render(text))


#: Rendered Markdown is a function of the text alone, so it is cached by the text's digest
#: across dashboard generations: a transcript re-rendered after an import parses nothing.
RENDERED_CACHE_SECONDS = 7 * 24 * 3600
_CACHE_VERSION = "md1"  # change when the rendering changes


def markdown_blocks(texts: Sequence[str]) -> list[SafeString]:
    """`markdown_block` of each text; the ones that need the parser come from the cache
    (one round trip for all of them) or are parsed and cached."""
    keys = {
        text: f"{_CACHE_VERSION}:{hashlib.blake2b(text.encode(), digest_size=16).hexdigest()}"
        for text in texts
        if text.strip() and len(text) <= MAX_RENDERED_CHARS and _PLAIN.search(text)
    }
    cached = cache.get_many(list(set(keys.values()))) if keys else {}
    missing = {}
    rendered = []
    for text in texts:
        key = keys.get(text)
        if key is None:
            rendered.append(markdown_block(text))
            continue
        html = cached.get(key)
        if html is None:
            html = cached[key] = missing[key] = sanitise(_parser().render(text))
        rendered.append(_block(text, mark_safe(html)))  # noqa: S308 (sanitised when cached)
    if missing:
        cache.set_many({k: str(v) for k, v in missing.items()}, RENDERED_CACHE_SECONDS)
    return rendered


#: "matched ordinal 5: …", "ordinal 12", "[4] tool call": where graders name an event.
_ORDINAL = re.compile(r"\b(ordinal\s+)(\d+)\b")


def link_ordinals(evidence: str, transcript_url: str) -> SafeString:
    """Evidence escaped, each "ordinal N" a link to that event of the transcript."""
    parts: list[str] = []
    position = 0
    for match in _ORDINAL.finditer(evidence):
        parts.append(escape(evidence[position : match.start()]))
        parts.append(
            format_html(
                '{}<a class="ordinal-link" href="{}#event-{}">{}</a>',
                match.group(1),
                transcript_url,
                match.group(2),
                match.group(2),
            )
        )
        position = match.end()
    parts.append(escape(evidence[position:]))
    return mark_safe("".join(parts))  # noqa: S308 (every piece escaped or built by format_html)


def markdown_block(text: str | None) -> SafeString:
    """Rendered Markdown with its source one click away: a "raw" toggle that needs no script
    (a <details> whose opening hides the rendered sibling, in CSS)."""
    text = text or ""
    return _block(text, render_markdown(text))


def _block(text: str, rendered: SafeString) -> SafeString:
    return format_html(
        '<div class="md-block"><details class="md-source"><summary title="show the text as '
        'written">raw</summary><pre>{}</pre></details><div class="md text">{}</div></div>',
        text,
        rendered,
    )
