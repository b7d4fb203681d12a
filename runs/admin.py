"""The admin: what the dashboard shows is edited here, what was graded or reviewed is read.

Every save and deletion ends with `runs.changes.changed()`, naming the runs whose search
documents it changed (`changes`), so search and cached pages show it at once; ModelAdmin
hooks rather than signals (the house style). Deletions take documents with them by cascade.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from .changes import changed
from .models import (
    AssertionResult,
    Condition,
    EvalCase,
    Grading,
    GradingHistory,
    Iteration,
    Review,
    Run,
    Skill,
)


class JSONDocumentField(forms.JSONField):
    """A JSON column that is never null but may hold {} or [].

    Django counts {} and [] as empty: required, the form field (and then the model's own
    check) refused them, so no iteration without findings and no eval without tags could be
    saved in the admin. Not required, they pass, and the model skips its check for them; a
    missing value (an empty box, `null`) is still refused.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "required": False})

    def validate(self, value: Any) -> None:
        if value is None:
            raise forms.ValidationError(self.error_messages["required"], code="required")
        super().validate(value)


class DashboardAdmin(admin.ModelAdmin):
    """An admin for rows the dashboard shows: each change starts a new generation."""

    def formfield_for_dbfield(
        self, db_field: models.Field, request: HttpRequest, **kwargs: Any
    ) -> forms.Field | None:
        if isinstance(db_field, models.JSONField) and not db_field.null:
            kwargs.setdefault("form_class", JSONDocumentField)
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def changes(self, obj: Any) -> dict[str, Any]:
        """What an edit of `obj` changed, as `changed()` takes it: the runs or iterations
        whose search documents it may have changed."""
        return {}

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        # After the row and its inlines, last in the admin's transaction.
        changed(**self.changes(form.instance))

    def delete_model(self, request: HttpRequest, obj: models.Model) -> None:
        super().delete_model(request, obj)
        changed()

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        super().delete_queryset(request, queryset)
        changed()


class EvidenceAdmin(admin.ModelAdmin):
    """What graders and reviewers recorded, read-only.

    A verdict changes through a reviewer's override (recorded with who, when and why) or
    `manage.py regrade`, which keep the grading's counts, the warnings and every page true;
    an edit here would change none of those. A row goes only with its run (or iteration,
    or skill), whose deletion starts a new generation.
    """

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Django asks this too when a run is deleted with its grading, which must stay
        # possible: refused only on this model's own pages (list, change, delete).
        match = request.resolver_match
        own = f"{self.opts.app_label}_{self.opts.model_name}_"
        if match is not None and (match.url_name or "").startswith(own):
            return False
        return super().has_delete_permission(request, obj)


@admin.register(Skill)
class SkillAdmin(DashboardAdmin):
    list_display = ["name", "description", "updated_at"]
    search_fields = ["name", "description"]


@admin.register(EvalCase)
class EvalCaseAdmin(DashboardAdmin):
    list_display = ["eval_id", "skill", "origin", "dialect", "skill_should_trigger", "created_at"]
    list_filter = ["skill", "origin", "skill_should_trigger"]
    search_fields = ["eval_id", "prompt"]
    readonly_fields = ["fingerprint"]

    def changes(self, obj: EvalCase) -> dict[str, Any]:
        return {"runs": obj.runs.values_list("pk", flat=True)}  # its prompt stands in for theirs


class ConditionInline(admin.TabularInline):
    model = Condition
    extra = 0


@admin.register(Iteration)
class IterationAdmin(DashboardAdmin):
    list_display = [
        "skill",
        "number",
        "label",
        "run_label",
        "mode",
        "agent_model",
        "generated_at",
        "missing_gradings",
        "source_kind",
    ]
    list_filter = ["skill", "mode", "source_kind"]
    search_fields = ["label", "run_label", "skill__name"]
    inlines = [ConditionInline]
    # The number is the iteration's address, handed out once (runs.models.addresses); the
    # position is kept by the importer from generation time.
    readonly_fields = [
        *("number", "position", "label_context"),
        *("source_key", "content_hash", "imported_at", "updated_at"),
    ]

    def changes(self, obj: Iteration) -> dict[str, Any]:
        return {"iterations": [obj]}  # a condition renamed in the inline filters its runs


@admin.register(Run)
class RunAdmin(DashboardAdmin):
    list_display = [
        "eval_id",
        "condition",
        "run_index",
        "iteration",
        "status",
        "total_tokens",
        "duration_ms",
    ]
    list_filter = ["status", "iteration__skill", "condition__name"]
    search_fields = ["eval_id", "final_message"]
    list_select_related = ["condition", "iteration__skill"]
    raw_id_fields = ["iteration", "condition", "eval_case"]

    def changes(self, obj: Run) -> dict[str, Any]:
        return {"runs": [obj.pk]}


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
