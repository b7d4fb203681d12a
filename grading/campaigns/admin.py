"""Queued campaigns in the admin: read-only, as evidence; deleting one releases its skills.

A campaign whose workers are gone holds its skills until EVALSITE_QUEUE_STALE_AFTER; a
staff member who knows it is dead can delete it here instead (its iterations and runs go
with it; nothing imported is touched).
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from .models import Campaign, QueuedIteration


class ReadOnly:
    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class QueuedIterationInline(ReadOnly, admin.TabularInline):
    model = QueuedIteration
    fields = ["skill_name", "label", "state", "error", "iteration", "finished_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False


@admin.register(Campaign)
class CampaignAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ["__str__", "requested_by", "created_at", "skills"]
    readonly_fields = ["requested_by", "created_at", "options"]
    inlines = [QueuedIterationInline]

    @admin.display(description="skills (state)")
    def skills(self, campaign: Campaign) -> str:
        return ", ".join(f"{q.skill_name} ({q.state})" for q in campaign.iterations.all())

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).prefetch_related("iterations")
