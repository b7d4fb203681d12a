"""A run's transcript as a reader sees it: every event in order, shaped once in Python.

The template then only loops (`templates/runs/_transcript.html`), inside a `{% cache %}`
region keyed on the dashboard generation, so a 2,000-event conversation is shaped and
rendered once per generation. Each event has an anchor (`#event-<ordinal>`) that the
graders' evidence links to. Long tool results are cut to their head, with their size, and
the whole result is one request away (`tool_result`), so the page stays small.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from html import escape
from typing import Any

from django.template.defaultfilters import filesizeformat
from django.utils.safestring import SafeString, mark_safe

from ..markup import markdown_block, markdown_blocks
from ..models import Run

#: A tool result longer than this shows its head and its size; the rest loads on request.
RESULT_HEAD_CHARS = 2_000
ARGS_SUMMARY_CHARS = 160
_ERROR_PREFIXES = ("error", "<tool_use_error>", "traceback (most recent call last)")


@dataclass(frozen=True, slots=True)
class Event:
    """One event of a transcript, ready to print."""

    ordinal: int
    kind: str  # user_message, assistant_message, tool_invocation
    who: str  # "user", "scripted turn", "responder (llm)", "assistant" or the tool's name
    round: int | None
    html: SafeString | None = None  # a message, rendered
    args_summary: str = ""
    args: str = ""
    result: str | None = None  # the whole result, or its head when `result_size` is larger
    result_size: int = 0
    is_error: bool = False
    skill: str = ""  # the skill a `Skill` call loaded
    usage: str = ""  # tokens and time of the API call, where the source recorded them
    #: Where the whole result is (`…/conversation/<ordinal>/result/`), for a cut result.
    result_url: str = ""

    @property
    def result_cut(self) -> bool:
        return self.result is not None and self.result_size > len(self.result)

    @property
    def n(self) -> str:
        """The ordinal as text: an int in a template goes through number localisation,
        6,000 times for a 2,000-event transcript."""
        return str(self.ordinal)

    @property
    def css(self) -> str:
        """The event's classes: its kind, and whether it errored or loaded a skill."""
        marks = ("error",) * self.is_error + ("skill-call",) * bool(self.skill)
        return " ".join((self.kind, *marks))

    @property
    def size(self) -> str:
        return filesizeformat(self.result_size)

    @property
    def li(self) -> SafeString:
        """The event as its <li>, every piece of agent text escaped.

        Built here rather than in the template: a 2,000-event transcript resolved 30,000
        template variables (each escaped through Django's lazy-aware helpers), 120 ms of a
        250 ms budget; html.escape on the same strings takes a tenth of that. The template
        (`_transcript.html`) keeps the list around them.
        """
        n = self.n
        usage = ""
        if self.usage:
            usage = f' <span class="muted small usage">{escape(self.usage)}</span>'

        head = (
            f'<li class="event {self.css}" id="event-{n}"><a class="ordinal muted small" '
            f'href="#event-{n}">#{n}</a>\n'
        )
        if self.html is not None:
            round_ = f" · round {self.round}" if self.round else ""
            who = f'<div class="who small">{escape(self.who)}{round_}{usage}</div>\n'
            return mark_safe(f"{head}{who}{self.html}</li>")  # noqa: S308 (escaped; sanitised)
        badges = ""
        if self.skill:
            badges += (
                ' <span class="badge good" title="the agent loaded a skill here">'
                f"skill: {escape(self.skill)}</span>"
            )
        if self.is_error:
            badges += ' <span class="badge bad">error</span>'
        parts = [
            f"{head}<details><summary><code>{escape(self.who)}</code>{badges} "
            f'<span class="muted small">{escape(self.args_summary)}</span>{usage}</summary>\n'
        ]
        if self.args:
            parts.append(f'<pre class="args">{escape(self.args)}</pre>\n')
        if self.result is not None:
            parts.append(f'<div class="small muted">result · {self.size}</div>\n')
            result = f'<pre class="result">{escape(self.result)}</pre>'
            if self.result_cut:
                url = escape(self.result_url)
                result = (
                    f'<div class="result-slot">{result}\n<a class="button small" href="{url}" '
                    f'hx-get="{url}" hx-target="closest .result-slot" hx-swap="innerHTML">'
                    f"Show the whole result ({self.size})</a></div>"
                )
            parts.append(result)
        parts.append("</details></li>")
        return mark_safe("".join(parts))  # noqa: S308 (every piece of text escaped above)


def _text(value: Any) -> str:
    """A tool's arguments or result as text: strings as they are, the rest indented JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def _is_error(result: Any) -> bool:
    if isinstance(result, dict):
        return bool(result.get("is_error") or result.get("error"))
    return isinstance(result, str) and result.lstrip()[:40].lower().startswith(_ERROR_PREFIXES)


def _usage(event: dict[str, Any]) -> str:
    """ "1,204 in · 310 out · 2.1 s" from the fields some harnesses record on an event."""
    usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
    parts = []
    for key, label in (("input_tokens", "in"), ("output_tokens", "out")):
        if isinstance(usage.get(key), int):
            parts.append(f"{usage[key]:,} {label}")
    if isinstance(event.get("duration_ms"), int | float):
        parts.append(f"{event['duration_ms'] / 1000:.1f} s")
    return " · ".join(parts)


def _who(event: dict[str, Any]) -> str:
    kind = event.get("type")
    if kind == "assistant_message":
        return "assistant"
    if isinstance(event.get("origin"), dict):
        return f"responder ({event['origin'].get('responder', '?')})"
    # The eval's prompt opens round 1; a later user turn nobody derived was scripted.
    return "scripted turn" if (event.get("round") or 1) > 1 else "user"


def shape(event: dict[str, Any], *, html: SafeString | None = None) -> Event:
    """One recorded event (conversation.json or run.json `tool_invocations`) as an Event;
    a message's `html` when it was rendered already."""
    ordinal = int(event.get("ordinal") or 0)
    round_ = event.get("round") if isinstance(event.get("round"), int) else None
    if event.get("type", "tool_invocation") != "tool_invocation":
        kind = str(event.get("type"))
        return Event(
            ordinal=ordinal,
            kind=kind,
            who=_who(event),
            round=round_,
            html=html if html is not None else markdown_block(str(event.get("text") or "")),
            usage=_usage(event),
        )
    name = str(event.get("name") or "?")
    args = event.get("args")
    raw = event.get("result")
    result = _text(raw) if raw is not None else None
    size = len(result) if result is not None else 0
    if result is not None and size > RESULT_HEAD_CHARS:
        result = result[:RESULT_HEAD_CHARS]
    summary = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return Event(
        ordinal=ordinal,
        kind="tool_invocation",
        who=name,
        round=round_,
        args_summary="" if args is None else summary[:ARGS_SUMMARY_CHARS],
        args=_text(args),
        result=result,
        result_size=size,
        is_error=_is_error(raw),
        skill=str(args.get("skill", "")) if name == "Skill" and isinstance(args, dict) else "",
        usage=_usage(event),
    )


def events_of(
    conversation: list[Any], tool_invocations: list[Any], *, base_url: str = ""
) -> list[Event]:
    """The transcript in ordinal order; a run without conversation.json shows its tool calls.
    `base_url`: the run's conversation fragment, under which each result has its address."""
    recorded = [e for e in conversation or tool_invocations or [] if isinstance(e, dict)]
    messages = [e for e in recorded if e.get("type", "tool_invocation") != "tool_invocation"]
    # Every message's Markdown at once: one cache round trip for a whole transcript.
    rendered = dict(
        zip(
            map(id, messages),
            markdown_blocks([str(e.get("text") or "") for e in messages]),
            strict=True,
        )
    )
    events = [shape(e, html=rendered.get(id(e))) for e in recorded]
    events.sort(key=lambda e: e.ordinal)
    if base_url:
        events = [
            replace(e, result_url=f"{base_url}{e.ordinal}/result/") if e.result_cut else e
            for e in events
        ]
    return events


def transcript_events(run: Run) -> list[Event]:
    """The run's transcript as `runs/_transcript.html` shows it; loads it when deferred."""
    base_url = run.get_absolute_url() + "conversation/"  # runs/urls.py: run + "conversation/"
    if "conversation" in run.get_deferred_fields():
        conversation, calls = Run.objects.values_list("conversation", "tool_invocations").get(
            pk=run.pk
        )
        return events_of(conversation, calls, base_url=base_url)
    return events_of(run.conversation, run.tool_invocations, base_url=base_url)


def tool_result(run: Run, ordinal: int) -> str | None:
    """The whole result of the run's event `ordinal`, as text; None when it has none."""
    conversation, calls = Run.objects.values_list("conversation", "tool_invocations").get(pk=run.pk)
    for event in conversation or calls or []:
        if isinstance(event, dict) and event.get("ordinal") == ordinal and "result" in event:
            return _text(event["result"])
    return None
