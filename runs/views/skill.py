"""A skill's page: its trend charts and iterations."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET

from ..models import Skill
from ..reading.skill import skill_trends


@require_GET
def skill_page(request: HttpRequest, skill: str) -> HttpResponse:
    found = Skill.objects.get_by_name_or_404(skill)
    context = {
        "skill": found,
        "iterations": found.iterations.count(),
        "trends": SimpleLazyObject(lambda: skill_trends(found)),
    }
    return render(request, "runs/skill.html", context)
