"""Review pages: a skill's needs-review queue, and a run's notes and overrides."""

from __future__ import annotations

from django.urls import path

from runs.urls import run

from . import views

app_name = "grading"

urlpatterns = [
    path("skills/<str:skill>/review/", views.review_queue, name="queue"),
    path(run + "notes/", views.note, name="note"),
    path(run + "results/<int:result>/override/", views.override_result, name="override"),
]
