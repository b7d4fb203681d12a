from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from runs.admin import EvidenceAdmin
from runs.models import AssertionResult, Grading, GradingHistory, Review


class AssertionResultInline(admin.TabularInline):
    """A grading's results, read-only as the grading is (see EvidenceAdmin)."""

    model = AssertionResult
    extra = 0
    fields = [
        *("assertion_id", "is_meta", "passed", "override_passed", "confidence", "grader"),
        *("judge_model", "evidence"),
    ]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Grading)
class GradingAdmin(EvidenceAdmin):
    list_display = ["run", "passed", "total", "pass_rate", "skill_invoked", "summary_computed"]
    list_filter = ["format", "skill_invoked", "summary_computed"]
    list_select_related = ["run__condition"]
    raw_id_fields = ["run"]
    inlines = [AssertionResultInline]


@admin.register(AssertionResult)
class AssertionResultAdmin(EvidenceAdmin):
    list_display = ["assertion_id", "passed", "confidence", "grader", "is_meta", "grading"]
    list_filter = ["passed", "grader", "is_meta"]
    search_fields = ["assertion_id", "evidence"]
    raw_id_fields = ["grading"]


@admin.register(GradingHistory)
class GradingHistoryAdmin(admin.ModelAdmin):
    """The gradings `manage.py regrade` replaced, kept as they were: read only."""

    list_display = ["run", "replaced_at", "format", "pass_rate"]
    list_filter = ["format"]
    list_select_related = ["run__condition"]
    raw_id_fields = ["run"]
    readonly_fields = ["run", "replaced_at", "replaced_by", "format", "pass_rate", "snapshot"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Review)
class ReviewAdmin(EvidenceAdmin):
    """Notes and overrides are the record of who changed a verdict, when and why."""

    list_display = ["run", "kind", "source", "author", "overridden_passed", "created_at"]
    list_filter = ["kind", "source"]
    raw_id_fields = ["run", "assertion_result", "author"]
