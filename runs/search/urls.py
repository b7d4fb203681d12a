from __future__ import annotations

from django.urls import path

from . import views

# Not the dashboard's "runs" namespace: a share link never opens a search (it would reach
# every iteration of a skill, or every skill).
app_name = "search"

urlpatterns = [
    path("search/", views.site_search, name="site"),
    path("skills/<str:skill>/search/", views.skill_search, name="skill"),
]
