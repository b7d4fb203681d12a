"""The skill page's link to the skill's queued campaigns."""

from __future__ import annotations

from typing import Any

from django import template

from ..models import QueuedIteration

register = template.Library()


@register.inclusion_tag("campaigns/_skill_campaigns.html")
def skill_campaigns(skill_name: str) -> dict[str, Any]:
    """The skill's running queued iteration, if any, else its latest one that did not import."""
    latest = (
        QueuedIteration.objects.filter(skill_name=skill_name)
        .with_counts()
        .select_related("campaign")
        .order_by("-pk")
        .first()
    )
    show = latest is not None and latest.state != QueuedIteration.State.IMPORTED
    return {"queued": latest if show else None}
