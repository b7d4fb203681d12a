"""A skill's alerts page, for staff: its destinations, a test alert, the recent deliveries."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import validate_email
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from runs.models import Skill

from .delivery import notify, site_targets, webhook_problem
from .messages import trial_alert
from .models import Delivery, Destination

#: Deliveries listed on the page, newest first.
RECENT_DELIVERIES = 25


class DestinationForm(forms.Form):
    kind = forms.ChoiceField(choices=Destination.Kind.choices)
    address = forms.CharField(max_length=2000, label="URL or address")

    def clean(self) -> dict[str, str]:
        data = super().clean()
        kind, address = data.get("kind"), data.get("address", "")
        if not kind or not address:
            return data
        if kind == Destination.Kind.EMAIL:
            try:
                validate_email(address)
            except ValidationError:
                raise ValidationError("that is not an e-mail address") from None
        elif (problem := webhook_problem(address, resolve=False)) is not None:
            raise ValidationError(problem)  # names the host only: the URL is a secret
        return data


def staff_skill(request: HttpRequest, name: str) -> Skill:
    if not request.user.is_staff:
        raise PermissionDenied("Only staff set where a skill's alerts go.")
    return Skill.objects.get_by_name_or_404(name)


def _page(
    request: HttpRequest, skill: Skill, *, status: int = 200, **extra: object
) -> HttpResponse:
    context = {
        "skill": skill,
        "destinations": Destination.objects.filter(skill=skill),
        "site_targets": site_targets(),
        "deliveries": Delivery.objects.filter(skill_name=skill.name)[:RECENT_DELIVERIES],
        "form": DestinationForm(),
        "site_url": settings.EVALSITE_SITE_URL,
        **extra,
    }
    return render(request, "alerts/skill_alerts.html", context, status=status)


@require_GET
def skill_alerts(request: HttpRequest, skill: str) -> HttpResponse:
    return _page(request, staff_skill(request, skill))


@require_POST
def add_destination(request: HttpRequest, skill: str) -> HttpResponse:
    found = staff_skill(request, skill)
    form = DestinationForm(request.POST)
    if not form.is_valid():
        return _page(request, found, form=form, status=400)
    Destination.objects.get_or_create(
        skill=found,
        kind=form.cleaned_data["kind"],
        address=form.cleaned_data["address"],
        defaults={"created_by": request.user},
    )
    return redirect("alerts:skill", found.name)


@require_POST
def remove_destination(request: HttpRequest, skill: str, pk: int) -> HttpResponse:
    found = staff_skill(request, skill)
    get_object_or_404(Destination, pk=pk, skill=found).delete()
    return redirect("alerts:skill", found.name)


@require_POST
def send_test(request: HttpRequest, skill: str) -> HttpResponse:
    """A test alert to this skill's own destinations (not the site's), delivered as any is."""
    found = staff_skill(request, skill)
    tested = notify(trial_alert(found.name), site_wide=False)
    return _page(request, found, tested=tested)
