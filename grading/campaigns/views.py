"""A queued campaign's progress: runs done, errored, running and pending per skill."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from .models import Campaign

#: How often an open page asks again while the campaign runs (htmx; a meta refresh without JS).
POLL_SECONDS = 3


@require_GET
@vary_on_headers("HX-Request")
def campaign_page(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=pk)
    template_name = "campaigns/campaign.html"
    if request.htmx:
        template_name += "#progress"
    context = {
        "campaign": campaign,
        "iterations": campaign.iterations.with_counts().select_related("iteration__skill"),
        "finished": campaign.finished,
        "poll_seconds": POLL_SECONDS,
    }
    return render(request, template_name, context)
