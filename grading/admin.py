from __future__ import annotations

from django.contrib import admin

from .models import AssertionResult, Grading, Review


class AssertionResultInline(admin.TabularInline):
    model = AssertionResult
    extra = 0
    fields = ["assertion_id", "is_meta", "passed", "confidence", "grader", "evidence"]


@admin.register(Grading)
class GradingAdmin(admin.ModelAdmin):
    list_display = ["run", "passed", "total", "pass_rate", "skill_invoked", "summary_computed"]
    list_filter = ["format", "skill_invoked", "summary_computed"]
    list_select_related = ["run__condition"]
    raw_id_fields = ["run"]
    inlines = [AssertionResultInline]


@admin.register(AssertionResult)
class AssertionResultAdmin(admin.ModelAdmin):
    list_display = ["assertion_id", "passed", "confidence", "grader", "is_meta", "grading"]
    list_filter = ["passed", "grader", "is_meta"]
    search_fields = ["assertion_id", "evidence"]
    raw_id_fields = ["grading"]


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin):
    list_display = ["run", "kind", "source", "author", "overridden_passed", "created_at"]
    list_filter = ["kind", "source"]
    raw_id_fields = ["run", "assertion_result", "author"]
