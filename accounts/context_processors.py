from __future__ import annotations

from django.http import HttpRequest

from .sharing import SHAREABLE


def access(request: HttpRequest) -> dict[str, object]:
    """`can_share`: the page is a view a share link can open, and the visitor may create one."""
    match = getattr(request, "resolver_match", None)
    user = getattr(request, "user", None)
    return {
        "can_share": bool(
            user is not None
            and user.is_authenticated
            and match is not None
            and match.namespace == "runs"
            and match.url_name in SHAREABLE
        )
    }
