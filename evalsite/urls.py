from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from accounts.views import open_share

from .api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    path("s/<str:token>/", open_share, name="share"),
    path("api/", api.urls),
    path("", include("grading.urls")),
    path("", include("runs.urls")),
]
