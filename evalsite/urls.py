from __future__ import annotations

from django.contrib import admin
from django.urls import path
from django.views.generic import RedirectView

urlpatterns = [
    path("admin/", admin.site.urls),
    # Until the dashboard pages exist, the admin is the UI.
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
]
