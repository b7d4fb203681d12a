"""A skill across harnesses and models: the matrix of deltas and the trend per combination."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET

from ..models import Mode, Skill
from ..reading.axes import skill_axes


class AxesForm(forms.Form):
    mode = forms.ChoiceField(required=False, choices=Mode.choices)

    def mode_asked(self) -> str | None:
        """The mode in the address; None (the newest iteration's) when none or an unknown one."""
        return (self.is_valid() and self.cleaned_data["mode"]) or None


@require_GET
def axes_page(request: HttpRequest, skill: str) -> HttpResponse:
    found = Skill.objects.get_by_name_or_404(skill)
    mode = AxesForm(request.GET).mode_asked()
    context = {
        "skill": found,
        "mode_asked": mode or "",
        "axes": SimpleLazyObject(lambda: skill_axes(found, mode=mode)),
    }
    return render(request, "runs/axes.html", context)
