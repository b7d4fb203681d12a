from __future__ import annotations

from django.http import HttpRequest

from .forms import ShareForm
from .sharing import SHAREABLE


def access(request: HttpRequest) -> dict[str, object]:
    """`share_form` when the page is a view a share link can open and the visitor may make one."""
    match = getattr(request, "resolver_match", None)
    user = getattr(request, "user", None)
    can_share = bool(
        user is not None
        and user.is_authenticated
        and match is not None
        and match.namespace == "runs"
        and match.url_name in SHAREABLE
    )
    if not can_share:
        return {"share_form": None}
    return {"share_form": ShareForm(initial={"path": request.get_full_path()})}
