from __future__ import annotations

from django.contrib import admin

from .models import Condition, EvalCase, Iteration, Run, Skill


@admin.register(Skill)
class SkillAdmin(admin.ModelAdmin):
    list_display = ["name", "description", "updated_at"]
    search_fields = ["name", "description"]


@admin.register(EvalCase)
class EvalCaseAdmin(admin.ModelAdmin):
    list_display = ["eval_id", "skill", "origin", "dialect", "skill_should_trigger", "created_at"]
    list_filter = ["skill", "origin", "skill_should_trigger"]
    search_fields = ["eval_id", "prompt"]
    readonly_fields = ["fingerprint"]


class ConditionInline(admin.TabularInline):
    model = Condition
    extra = 0


@admin.register(Iteration)
class IterationAdmin(admin.ModelAdmin):
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
    readonly_fields = ["source_key", "content_hash", "imported_at", "updated_at"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
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
