"""The compare page's per-eval rows and flipped assertions, built in Python.

A 60-eval comparison has 60 rows and hundreds of flips, each with four or five links: as
template tags and includes, their lookups, `reverse` calls and number formatting made most
of the page's first view. Every text is escaped (`format_html`); every link is what
`scoped_url` gives (nothing where a share link does not open it, or no address can hold the
eval id).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django import template
from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import RFC3986_SUBDELIMS
from django.utils.safestring import SafeString, mark_safe

from runs.reading.compare import CompareRow, CompareTable, Comparison
from runs.stats import Estimate

from .evalsite import delta, interval, score

register = template.Library()

#: What `reverse` leaves unquoted in a path (django.urls.resolvers).
_PATH_SAFE = RFC3986_SUBDELIMS + "/~:@"
_MARKER = "eval-id"

#: `runs/_direction.html` with mark_only: the mark, its word in the title.
DIRECTION_MARKS = {
    "improved": '<span class="direction up" title="improved">▲</span>',
    "regressed": '<span class="direction down" title="regressed">▼</span>',
    "unchanged": '<span class="direction same" title="unchanged">=</span>',
    "one-side": '<span class="direction" title="on one side only">◦</span>',
}


class EvalAddresses:
    """One view's address for many eval ids: reversed once, each id quoted in as `reverse`
    would, and "" where `scoped_url` gives "" (a share link that does not open it, or an id
    the `<str:eval_id>` converter refuses: empty or with a "/")."""

    def __init__(self, request: Any, name: str, *args: Any) -> None:
        address = reverse(name, args=[*args, _MARKER])
        self.prefix, _, self.suffix = address.rpartition(_MARKER)
        self.link = getattr(request, "share_link", None)
        #: Whether the share link opens this view whatever the eval: asked once, unless its
        #: scope names an eval (then it is asked per address).
        self.opened: bool | None = None
        if (
            self.link is not None
            and "eval_id" not in self.link.SCOPE_KEYS[self.link.Kind(self.link.kind)]
        ):
            self.opened = self.link.opens(address)

    def __call__(self, eval_id: str) -> str:
        if not eval_id or "/" in eval_id:
            return ""
        address = self.prefix + quote(eval_id, safe=_PATH_SAFE) + self.suffix
        if self.link is None or self.opened:
            return address
        if self.opened is None and self.link.opens(address):
            return address
        return ""


def _links(context: template.Context, comparison: Comparison, skill: str) -> dict[str, Any]:
    request = context.get("request")
    before, after = comparison.before.number, comparison.after.number
    return {
        "before": EvalAddresses(request, "runs:eval", skill, before),
        "after": EvalAddresses(request, "runs:eval", skill, after),
        "diff": EvalAddresses(request, "runs:diff", skill, before),
        "history": EvalAddresses(request, "runs:eval_history", skill),
        "ib": f"&amp;ib={comparison.diff_ib}" if comparison.diff_ib else "",
    }


def _diff_href(base: str, before_run: str, after_run: str, ib: str) -> SafeString:
    return format_html(
        "{}?a={}&amp;b={}{}",
        base,
        quote(before_run, safe=""),
        quote(after_run, safe=""),
        mark_safe(ib),
    )


def _interval(estimate: Estimate) -> SafeString:
    """The change's interval over runs, or why there is none (a word and a title for each)."""
    if estimate.interval and estimate.interval.low != estimate.interval.high:
        return format_html('<span class="muted small">{}</span>', interval(estimate.interval, True))
    if estimate.interval:
        return mark_safe(
            '<span class="muted small" title="every run scored the same on both sides: no '
            'spread to build an interval on">no spread</span>'
        )
    return mark_safe(
        '<span class="muted small" title="an interval over runs needs at least 2 runs a side">'
        "1 run: no interval</span>"
    )


@register.simple_tag(takes_context=True)
def compare_rows(
    context: template.Context,
    table: CompareTable,
    comparison: Comparison,
    skill: str,
    diffs_open: bool,
) -> SafeString:
    """The per-eval table's rows (none for an empty table: the template says why)."""
    links = _links(context, comparison, skill)
    before, after = comparison.before_side, comparison.after_side
    both = bool(before.control and after.control)
    same = comparison.same_iteration
    return format_html_join(
        "\n",
        "{}",
        ((_row(row, links, before, after, both, same, diffs_open),) for row in table.rows),
    )


def _row(
    row: CompareRow,
    links: dict[str, Any],
    before: Any,
    after: Any,
    both: bool,
    same: bool,
    diffs_open: bool,
) -> SafeString:
    e = row.change
    before_url, after_url = links["before"](e.eval_id), links["after"](e.eval_id)
    name = format_html('<a href="{}">{}</a>', after_url, row.name) if after_url else row.name
    if row.name != e.eval_id:
        name = format_html('{} <code class="muted small">{}</code>', name, e.eval_id)
    if row.flips:
        name = format_html(
            '{} <a class="flip-count small" href="#flips-{}" title="assertions that flipped">'
            "{} flip{}</a>",
            name,
            quote(e.eval_id, safe=""),
            len(row.flips),
            "" if len(row.flips) == 1 else "s",
        )
    absent = mark_safe('<span class="muted">absent</span>')
    cells = [
        name,
        absent if e.treatment_before is None else score(e.treatment_before),
        absent if e.treatment_after is None else score(e.treatment_after),
        _change(row),
    ]
    if both:
        cells += [
            delta(e.delta_before),
            delta(e.delta_after),
            delta(e.delta_change.value) if e.delta_change else "–",
        ]
    if e.adjusted_p is not None and e.treatment_change is not None and e.treatment_change.n >= 2:
        cells.append(floatformat(e.adjusted_p, 3))
    else:
        cells.append(mark_safe('<span title="needs at least 2 runs a side">–</span>'))
    css = e.badge if e.badge in ("regressed", "improved") else ""
    return format_html(
        '<tr class="{}">{}<td class="open-links">{}</td></tr>',
        css,
        format_html_join("", "<td>{}</td>", ((cell,) for cell in cells)),
        _open_links(row, links, before, after, before_url, after_url, same, diffs_open),
    )


def _change(row: CompareRow) -> SafeString | str:
    e = row.change
    if not e.treatment_change:
        return "–"
    badge = ""
    if e.badge:
        badge = format_html(
            ' <span class="badge {}" title="significant after a Holm–Bonferroni correction '
            'across the evals compared">{} significant</span>',
            "good" if e.badge == "improved" else "bad",
            "▲" if e.badge == "improved" else "▼",
        )
    return format_html(
        "{} {} {}{}",
        mark_safe(DIRECTION_MARKS.get(row.direction, "")),
        delta(e.treatment_change.value),
        _interval(e.treatment_change),
        badge,
    )


def _open_links(
    row: CompareRow,
    links: dict[str, Any],
    before: Any,
    after: Any,
    before_url: str,
    after_url: str,
    same: bool,
    diffs_open: bool,
) -> SafeString:
    parts = []
    if same:
        if after_url:
            parts.append(format_html('<a href="{}">eval</a>', after_url))
    else:
        if before_url:
            parts.append(
                format_html(
                    '<a href="{}" title="this eval in {}">{}</a>',
                    before_url,
                    before.label,
                    before.label,
                )
            )
        if after_url:
            parts.append(
                format_html(
                    ' <a href="{}" title="this eval in {}">{}</a>',
                    after_url,
                    after.label,
                    after.label,
                )
            )
    if diffs_open and row.before_run and row.after_run and (base := links["diff"](row.eval_id)):
        parts.append(
            format_html(
                ' <a class="diff-link" href="{}" title="{} of {} against {} of {}">diff</a>',
                _diff_href(base, row.before_run, row.after_run, links["ib"]),
                row.before_run,
                before.label,
                row.after_run,
                after.label,
            )
        )
    if history_url := links["history"](row.eval_id):
        parts.append(
            format_html(
                ' <a class="history-link" href="{}" title="this eval across every iteration">'
                "history</a>",
                history_url,
            )
        )
    return format_html_join("", "{}", ((part,) for part in parts))


@register.simple_tag(takes_context=True)
def flip_groups(
    context: template.Context,
    table: CompareTable,
    comparison: Comparison,
    skill: str,
    diffs_open: bool,
) -> SafeString:
    """Each eval's flipped assertions, with the runs to diff (none: the template says so)."""
    links = _links(context, comparison, skill)
    labels = (comparison.before_side.label, comparison.after_side.label)
    opened = table.flip_count <= 10
    return format_html_join(
        "\n",
        "{}",
        ((_flip_group(row, links, labels, opened, diffs_open),) for row in table.with_flips),
    )


def _flip_group(
    row: CompareRow,
    links: dict[str, Any],
    labels: tuple[str, str],
    opened: bool,
    diffs_open: bool,
) -> SafeString:
    base = links["diff"](row.eval_id) if diffs_open else ""
    title = format_html("<strong>{}</strong>", row.name)
    if row.name != row.eval_id:
        title = format_html('{} <code class="muted small">{}</code>', title, row.eval_id)
    fixed, broke = row.fixed, row.broke
    counts = [format_html('<span class="good-text">▲ {} fixed</span>', fixed)] if fixed else []
    if broke:
        counts.append(format_html('<span class="bad-text">▼ {} broke</span>', broke))
    history = ""
    if history_url := links["history"](row.eval_id):
        history = format_html(
            ' · <a class="history-link small" href="{}" title="this eval across every '
            'iteration">history</a>',
            history_url,
        )
    flips = format_html_join(
        "",
        "<tr><td><code>{}</code></td><td>{}</td><td>{}/{}</td><td>{}/{}</td><td>{}</td>"
        "<td>{}</td></tr>",
        (
            (
                f.flip.assertion_id,
                f.flip.role,
                f.flip.before.passed,
                f.flip.before.runs,
                f.flip.after.passed,
                f.flip.after.runs,
                mark_safe('<span class="badge bad">▼ broke</span>')
                if f.flip.direction == "broke"
                else mark_safe('<span class="badge good">▲ fixed</span>'),
                format_html(
                    '<a href="{}">diff</a>',
                    _diff_href(base, f.before_run, f.after_run, links["ib"]),
                )
                if base
                else "–",
            )
            for f in row.flips
        ),
    )
    return format_html(
        '<details class="flip-group" id="flips-{}"{}>\n  <summary>{}: {}{}</summary>\n'
        '  <div class="table-scroll"><table class="grid flips">\n'
        "    <thead><tr><th>Assertion</th><th>Role</th><th>{}</th><th>{}</th><th>Flip</th>"
        '<th title="a run before with the old verdict against one after with the new">Runs</th>'
        "</tr></thead>\n    <tbody>{}</tbody>\n  </table></div>\n</details>",
        quote(row.eval_id, safe=""),
        mark_safe(" open") if opened else "",
        title,
        format_html_join(" · ", "{}", ((c,) for c in counts)),
        history,
        labels[0],
        labels[1],
        flips,
    )
