from __future__ import annotations

from django.urls import path, register_converter

from .views.axes import axes_page
from .views.compare import compare_page
from .views.eval import eval_page, run_diff
from .views.exports import eval_export, matrix_export, runs_export, trend_export
from .views.history import eval_history_page
from .views.iteration import benchmark_json, cell_page, iteration_list, iteration_page
from .views.overview import overview
from .views.run import conversation_fragment, event_result, run_page
from .views.skill import skill_page
from .views.triggers import trigger_compare_page, trigger_page

app_name = "runs"


class ExportFormat:
    """A download's extension: `matrix.csv`, `matrix.json`."""

    regex = "csv|json"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(ExportFormat, "export")

iteration = "skills/<str:skill>/iterations/<int:number>/"
run = iteration + "evals/<str:eval_id>/<str:condition>/<int:run>/"

urlpatterns = [
    path("", overview, name="overview"),
    path("skills/<str:skill>/", skill_page, name="skill"),
    path("skills/<str:skill>/compare/", compare_page, name="compare"),
    path("skills/<str:skill>/axes/", axes_page, name="axes"),
    path("skills/<str:skill>/trend.<export:fmt>", trend_export, name="trend_export"),
    path("skills/<str:skill>/evals/<str:eval_id>/", eval_history_page, name="eval_history"),
    path("skills/<str:skill>/triggers/<int:number>/", trigger_page, name="trigger"),
    path("skills/<str:skill>/triggers/compare/", trigger_compare_page, name="trigger-compare"),
    path(iteration, iteration_page, name="iteration"),
    path(iteration + "benchmark.json", benchmark_json, name="benchmark"),
    path(iteration + "matrix.<export:fmt>", matrix_export, name="matrix_export"),
    path(iteration + "runs.<export:fmt>", runs_export, name="runs_export"),
    path(
        iteration + "assertions/",
        iteration_list,
        {"kind": "assertion_classes"},
        name="assertion_classes",
    ),
    path(iteration + "flaky/", iteration_list, {"kind": "flaky"}, name="flaky"),
    path(iteration + "evals/<str:eval_id>/", eval_page, name="eval"),
    path(iteration + "evals/<str:eval_id>/diff/", run_diff, name="diff"),
    path(iteration + "evals/<str:eval_id>/summary.<export:fmt>", eval_export, name="eval_export"),
    path(iteration + "cells/<str:eval_id>/<str:condition>/", cell_page, name="cell"),
    path(run, run_page, name="run"),
    path(run + "conversation/", conversation_fragment, name="conversation"),
    path(run + "conversation/<int:ordinal>/result/", event_result, name="event_result"),
]
