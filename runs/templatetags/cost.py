"""Money beside tokens: `{% load cost %}` for a run's cost, a group's (runs.pricing.Cost) and
dollars. Where a cost is not known the reason is shown (hover), never a guessed number."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from runs import pricing
from runs.models import Run

register = template.Library()


@register.filter
def usd(amount: float | None) -> str:
    return pricing.format_usd(amount)


@register.simple_tag
def run_cost(run: Run, model: str) -> str:
    """The run's cost at `model`'s price, its tokens by kind on hover; else why not."""
    tokens = run.token_kinds()
    cost = pricing.run_cost(model, tokens, total_tokens=run.total_tokens)
    if cost.total_usd is None or tokens is None:
        return group_cost(cost)
    return format_html(
        '<span class="cost" title="{} input, {} output, {} cache write, {} cache read '
        'tokens at {}’s price">{}</span>',
        tokens.input,
        tokens.output,
        tokens.cache_write,
        tokens.cache_read,
        model,
        pricing.format_usd(cost.total_usd),
    )


@register.simple_tag
def group_cost(cost: pricing.Cost, per: str = "mean") -> str:
    """A condition's or iteration's cost (`per`: "mean" a run, or "total"), or why not."""
    amount = cost.mean_usd if per == "mean" else cost.total_usd
    if amount is None and cost.note.startswith("no price"):
        return format_html('<span class="cost-none">{}</span>', cost.note)
    if amount is None:
        return format_html('<span class="cost-none" title="{}">no cost</span>', cost.note)
    if cost.note:
        return format_html(
            '<span class="cost" title="{}">{}*</span>', cost.note, pricing.format_usd(amount)
        )
    return format_html('<span class="cost">{}</span>', pricing.format_usd(amount))
