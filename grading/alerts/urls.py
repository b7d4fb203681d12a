"""A skill's alerts page (staff only) and its forms."""

from __future__ import annotations

from django.urls import path

from . import views

app_name = "alerts"

urlpatterns = [
    path("skills/<str:skill>/alerts/", views.skill_alerts, name="skill"),
    path("skills/<str:skill>/alerts/add/", views.add_destination, name="add"),
    path("skills/<str:skill>/alerts/<int:pk>/remove/", views.remove_destination, name="remove"),
    path("skills/<str:skill>/alerts/test/", views.send_test, name="test"),
]
