from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from accounts.views import open_share
from runs.views.imports import import_page

from .api import api

admin.site.site_header = "evalsite administration"
admin.site.site_title = "evalsite admin"
admin.site.index_title = "Skills, results and accounts"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    path("s/<str:token>/", open_share, name="share"),
    path("api/", api.urls),
    # Outside the dashboard's "runs" namespace: a form that writes, never opened by a share link
    # or by EVALSITE_PUBLIC_READ.
    path("imports/", import_page, name="import"),
    # A queued campaign's progress: login required (no share link or public read opens it).
    path("campaigns/", include("grading.campaigns.urls")),
    path("", include("grading.urls")),
    # A skill's alerts: staff only (no share link or public read opens it).
    path("", include("grading.alerts.urls")),
    path("", include("runs.search.urls")),
    path("", include("runs.urls")),
]
