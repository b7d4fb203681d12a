"""Number formatting for pages: the same wording the verdict sentences use."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.http import QueryDict
from django.utils.html import format_html

from runs.stats import format_interval, signed

register = template.Library()


@register.filter
def score(value: float | None) -> str:
    """0.833 → "0.83"; None → "–"."""
    return "–" if value is None else f"{value:.2f}"


@register.filter
def delta(value: float | None) -> str:
    """0.42 → "+0.42", −0.1 → "−0.10"."""
    return "–" if value is None else signed(value)


@register.filter
def interval(value: Any, signed_values: bool = False) -> str:
    """An Interval as "0.61 to 0.98" (or signed: "−0.10 to +0.25"); "" when there is none."""
    return "" if value is None else format_interval(value, with_sign=bool(signed_values))


@register.filter
def percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


@register.filter
def duration(ms: float | None) -> str:
    """Milliseconds as "42 s" or "3.1 min"."""
    if ms is None:
        return "–"
    seconds = ms / 1000
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


@register.filter
def tokens(value: float | None) -> str:
    """Tokens as "16.7k"."""
    if value is None:
        return "–"
    return f"{value / 1000:.1f}k" if value >= 1000 else f"{value:.0f}"


@register.simple_tag(takes_context=True)
def query_with(context: template.Context, **changes: Any) -> str:
    """The current query string with some parameters replaced (None removes one)."""
    query: QueryDict = context["request"].GET.copy()
    for key, value in changes.items():
        if value is None or value == "":
            query.pop(key, None)
        else:
            query[key] = value
    encoded = query.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.simple_tag(takes_context=True)
def sort_link(context: template.Context, key: str, label: str, first: str = "desc") -> str:
    """A column header that sorts by `key`, toggling direction; works with and without htmx."""
    current = context.get("sort", "")
    if current == key:
        target, arrow = f"-{key}", " ▲"
    elif current == f"-{key}":
        target, arrow = key, " ▼"
    else:
        target, arrow = (f"-{key}" if first == "desc" else key), ""
    url = query_with(context, sort=target)
    return format_html('<a href="{}" hx-get="{}">{}{}</a>', url, url, label, arrow)


@register.filter
def pretty_json(value: Any) -> str:
    """Tool arguments and results as indented JSON (strings shown as they are)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


@register.filter
def compact_json(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
