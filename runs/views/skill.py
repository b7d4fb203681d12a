"""A skill's page: its trend charts and iterations, and its Triggering panel."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET

from ..models import Skill
from ..reading.skill import skill_trends
from ..reading.triggers import trigger_panel


@require_GET
def skill_page(request: HttpRequest, skill: str) -> HttpResponse:
    found = Skill.objects.get_by_name_or_404(skill)
    context = {
        "skill": found,
        "iterations": found.iterations.count(),
        "trigger_iterations": found.trigger_iterations.count(),
        "trends": SimpleLazyObject(lambda: skill_trends(found)),
        "triggers": SimpleLazyObject(lambda: trigger_panel(found)),
    }
    return render(request, "runs/skill.html", context)
