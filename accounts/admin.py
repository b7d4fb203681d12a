from __future__ import annotations

from django.contrib import admin

from .models import ApiToken, ShareLink


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "user",
        "prefix",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    ]
    list_filter = ["revoked_at"]
    search_fields = ["name", "user__username", "prefix"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    exclude = ["digest"]

    def has_add_permission(self, request) -> bool:
        # A token is shown once, to its owner, on the account page; the admin never sees one.
        return False


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):
    list_display = ["path", "kind", "skill", "creator", "created_at", "expires_at", "revoked_at"]
    list_filter = ["kind", "skill"]
    search_fields = ["path", "creator__username", "prefix"]
    readonly_fields = [
        "prefix",
        "created_at",
        "last_used_at",
        "kind",
        "scope",
        "query",
        "path",
        "skill",
    ]
    exclude = ["digest"]

    def has_add_permission(self, request) -> bool:
        return False
