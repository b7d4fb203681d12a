"""A run's page, its transcript alone (loaded by htmx) and one tool call's whole result."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET

from ..models import Run
from ..reading.transcript import tool_result, transcript_events


@require_GET
def run_page(
    request: HttpRequest, skill: str, number: int, eval_id: str, condition: str, run: int
) -> HttpResponse:
    found = Run.objects.get_by_address_or_404(skill, number, eval_id, condition, run)
    context = {
        "run": found,
        "events": SimpleLazyObject(lambda: transcript_events(found)),
        "skill": found.iteration.skill,
        "iteration": found.iteration,
        "eval_id": eval_id,
        "eval_name": found.eval_name,
        "case": found.eval_case,
    }
    return render(request, "runs/run.html", context)


@require_GET
def conversation_fragment(
    request: HttpRequest, skill: str, number: int, eval_id: str, condition: str, run: int
) -> HttpResponse:
    """A run's transcript alone, loaded on demand into the eval page by htmx."""
    found = _without_transcript(skill, number, eval_id, condition, run)
    context = {"run": found, "events": SimpleLazyObject(lambda: transcript_events(found))}
    return render(request, "runs/_transcript.html", context)


@require_GET
def event_result(
    request: HttpRequest,
    skill: str,
    number: int,
    eval_id: str,
    condition: str,
    run: int,
    ordinal: int,
) -> HttpResponse:
    """One tool call's whole result: swapped in place by htmx, else the text as a page."""
    found = _without_transcript(skill, number, eval_id, condition, run)
    text = tool_result(found, ordinal)
    if text is None:
        raise Http404(f"Event {ordinal} of this run has no tool result.")
    if request.htmx:
        return render(request, "runs/_transcript_result.html", {"result": text})
    # nosniff (SecurityMiddleware) keeps a browser from reading the agent's text as HTML.
    return HttpResponse(text, content_type="text/plain; charset=utf-8")


def _without_transcript(skill: str, number: int, eval_id: str, condition: str, run: int) -> Run:
    """The run the URL names, without its transcript (loaded when a cached region misses)."""
    return Run.objects.defer("conversation", "tool_invocations").get_by_address_or_404(
        skill, number, eval_id, condition, run
    )
