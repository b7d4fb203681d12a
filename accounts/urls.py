from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from . import views

app_name = "accounts"

urlpatterns = [
    path("", views.account, name="account"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "password/",
        auth_views.PasswordChangeView.as_view(success_url="/accounts/password/done/"),
        name="password_change",
    ),
    path(
        "password/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("tokens/", views.create_token, name="create_token"),
    path("tokens/<int:pk>/revoke/", views.revoke_token, name="revoke_token"),
    path("shares/", views.create_share, name="create_share"),
    path("shares/<int:pk>/revoke/", views.revoke_share, name="revoke_share"),
]
