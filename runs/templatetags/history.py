"""The eval history's assertion cells, built in Python: a 20-iteration history has hundreds.

As a template include, each cell's dozen lookups made most of the page's first view.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from runs.models import Iteration
from runs.reading.history import AssertionCell

register = template.Library()

ROLE_LETTERS = {"treatment": "T", "control": "C"}
FLIP_WORDS = {"fixed": "▲ fixed", "broke": "▼ broke"}


@register.simple_tag
def assertion_cells(
    cells: list[tuple[str, AssertionCell | None]], previous: Iteration | None, both_roles: bool
) -> SafeString:
    """One assertion of one iteration: passes/runs per role, its flip in words; "–" where
    it was not graded. Every text is escaped (format_html)."""
    return format_html_join(
        "", "{}", ((_cell(role, cell, previous, both_roles),) for role, cell in cells)
    )


def _cell(
    role: str, cell: AssertionCell | None, previous: Iteration | None, both_roles: bool
) -> SafeString:
    letter = ""
    if both_roles:
        title = f"{role}: {cell.condition}" if cell else role
        letter = format_html(
            '<abbr class="muted small" title="{}">{}</abbr> ', title, ROLE_LETTERS.get(role, role)
        )
    if cell is None:
        return format_html('<div class="history-cell">{}<span class="muted">–</span></div>', letter)
    flip = ""
    if cell.flip and cell.before is not None and previous is not None:
        flip = format_html(
            ' <span title="{}/{} in #{} {}">{}</span>',
            cell.before.passed,
            cell.before.runs,
            previous.number,
            previous.label,
            FLIP_WORDS[cell.flip],
        )
    return format_html(
        '<div class="history-cell{}">{}<span class="{}-count">{}/{}</span>{}</div>',
        f" flip {cell.flip}" if cell.flip else "",
        letter,
        cell.status,
        cell.passed,
        cell.runs,
        flip,
    )
