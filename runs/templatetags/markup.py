"""Template filters for agent- and author-written text (see runs.markup)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from runs import markup

register = template.Library()


@register.filter
def markdown(text: str | None) -> SafeString:
    """Markdown rendered and sanitised, with a "raw" toggle beside it."""
    return markup.markdown_block(text)


@register.filter
def evidence_links(evidence: str, transcript_url: str) -> SafeString:
    """Evidence escaped, each "ordinal N" linking to event N of the transcript at the URL."""
    return markup.link_ordinals(evidence or "", transcript_url)
