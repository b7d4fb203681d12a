from __future__ import annotations

from django.urls import path

from . import drilldown, transcript, views

app_name = "runs"

iteration = "skills/<str:skill>/iterations/<int:number>/"
run = iteration + "evals/<str:eval_id>/<str:condition>/<int:run>/"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("skills/<str:skill>/", views.skill_page, name="skill"),
    path("skills/<str:skill>/compare/", views.compare_page, name="compare"),
    path(iteration, views.iteration_page, name="iteration"),
    path(iteration + "benchmark.json", views.benchmark_json, name="benchmark"),
    path(
        iteration + "assertions/",
        views.iteration_list,
        {"kind": "assertion_classes"},
        name="assertion_classes",
    ),
    path(iteration + "flaky/", views.iteration_list, {"kind": "flaky"}, name="flaky"),
    path(iteration + "evals/<str:eval_id>/", views.eval_page, name="eval"),
    path(iteration + "evals/<str:eval_id>/diff/", drilldown.run_diff, name="diff"),
    path(iteration + "cells/<str:eval_id>/<str:condition>/", drilldown.cell_runs, name="cell"),
    path(run, views.run_page, name="run"),
    path(run + "conversation/", transcript.conversation_fragment, name="conversation"),
    path(run + "conversation/<int:ordinal>/result/", transcript.event_result, name="event_result"),
]
