"""Number formatting for pages: the same wording the verdict sentences use."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django import template
from django.urls import NoReverseMatch, reverse
from django.utils.timezone import localtime

from runs.charts.colours import condition_colour
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


@register.inclusion_tag("runs/_sort_link.html", takes_context=True)
def sort_link(
    context: template.Context, key: str, label: str, first: str = "desc"
) -> dict[str, Any]:
    """A column header that sorts by `key`, toggling direction; works with and without htmx."""
    current = context.get("sort", "")
    if current == key:
        target, arrow = f"-{key}", "▲"
    elif current == f"-{key}":
        target, arrow = key, "▼"
    else:
        target, arrow = (f"-{key}" if first == "desc" else key), ""
    # The link itself is built by Django's {% querystring %} in the template.
    return {"request": context["request"], "target": target, "arrow": arrow, "label": label}


@register.filter
def tokens_delta(value: float | None) -> str:
    """A token difference as "+120" or "−1.5k"."""
    if value is None:
        return "–"
    text = tokens(abs(value))
    return text if text in {"0", "0.0k"} else ("+" if value > 0 else "\u2212") + text


@register.filter
def name_of(names: dict[str, str], eval_id: str) -> str:
    """An eval's name from an {eval id: name} mapping; the id when it has none."""
    return names.get(eval_id) or eval_id


@register.filter
def head(items: Any, limit: int | None) -> Any:
    """The first `limit` items; all of them for None."""
    return items if limit is None else items[:limit]


@register.simple_tag(takes_context=True)
def scoped_url(context: template.Context, name: str, *args: Any, **query: Any) -> str:
    """The address of a page (`query` as its query string), or "" when there is none to show.

    "" when the visitor came through a share link that does not open that page (a shared
    view shows no link that would lead to the login page), and for arguments no address can
    hold (an id stored before ids were validated): `{% if url %}` then shows plain text.
    """
    try:
        address = reverse(name, args=args)
    except NoReverseMatch:
        return ""
    pairs = {key: value for key, value in query.items() if value is not None and value != ""}
    if pairs:
        address += "?" + urlencode(pairs)
    request = context.get("request")
    link = getattr(request, "share_link", None)
    if link is not None and not link.opens(address):
        return ""
    return address


@register.filter
def iteration_title(iteration: Any) -> str:
    """ "#3 ask-about-env": the number evalsite gave it (its address), then the label its
    folder had, and for an iteration sharing that label what tells them apart ("(ws-b)")."""
    if title := getattr(iteration, "title", None):
        return title
    return f"#{iteration.number} {iteration.label}" if iteration.label else f"#{iteration.number}"


@register.filter
def iteration_choice(iteration: Any) -> str:
    """ "#3 ask-about-env · 2026-05-01 10:00": its title and when it was generated, for a
    list that picks one iteration among many."""
    when = getattr(iteration, "generated_at", None)
    title = iteration_title(iteration)
    return f"{title} · {localtime(when):%Y-%m-%d %H:%M}" if when else title


@register.filter
def colour(condition: str, role: str = "") -> str:
    """The condition's colour on every chart and swatch of the site (runs.colours)."""
    return condition_colour(condition, role or None)


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
