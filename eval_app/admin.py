from __future__ import annotations

from django.contrib import admin

from .models import EvalCase, EvalCaseResult, EvalRun, EvalSet


@admin.register(EvalSet)
class EvalSetAdmin(admin.ModelAdmin):
    list_display = ["eval_set_id", "app_name", "name", "updated_at"]
    search_fields = ["eval_set_id", "name"]


@admin.register(EvalCase)
class EvalCaseAdmin(admin.ModelAdmin):
    list_display = ["eval_id", "eval_set", "position", "updated_at"]
    list_filter = ["eval_set"]


@admin.register(EvalRun)
class EvalRunAdmin(admin.ModelAdmin):
    list_display = ["pk", "eval_set", "app_name", "status", "done", "total", "passed", "created_at"]
    list_filter = ["status", "app_name"]


@admin.register(EvalCaseResult)
class EvalCaseResultAdmin(admin.ModelAdmin):
    list_display = ["eval_id", "run", "repeat", "status", "agent_seconds"]
    list_filter = ["status"]
