"""An eval's history: the eval across every iteration of its skill."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET

from ..models import Run, Skill
from ..names import findable
from ..reading.history import eval_history, eval_name


@require_GET
def eval_history_page(request: HttpRequest, skill: str, eval_id: str) -> HttpResponse:
    found = Skill.objects.get_by_name_or_404(skill)
    # Asked first so a cached page computes nothing: the history is read when first used.
    if not (
        findable(eval_id) and Run.objects.filter(iteration__skill=found, eval_id=eval_id).exists()
    ):
        raise Http404(f"No iteration of {found.name} ran an eval “{eval_id}”.")
    context = {
        "skill": found,
        "eval_id": eval_id,
        # Outside the cached region (title, crumbs): one query, not the whole history.
        "eval_name": eval_name(found, eval_id),
        "history": SimpleLazyObject(lambda: eval_history(found, eval_id)),
    }
    return render(request, "runs/eval_history.html", context)
