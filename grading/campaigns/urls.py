"""A queued campaign's progress page."""

from __future__ import annotations

from django.urls import path

from . import views

app_name = "campaigns"

urlpatterns = [
    path("<int:pk>/", views.campaign_page, name="campaign"),
]
