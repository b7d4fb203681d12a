from __future__ import annotations

from django.http import HttpRequest

from .forms import ShareForm
from .sharing import SHAREABLE, shared_address


def access(request: HttpRequest) -> dict[str, object]:
    """What the header and the cached page regions need to know about the visitor.

    - `share_form`: when the page is a view a share link can open and the visitor may make one;
    - `share_scope`: the kind of share link the page was opened through ("" for everyone
      else), part of the cache key of every region whose links depend on it;
    - `share_copy_url`: in a shared view, the share link "Copy link" copies.
    """
    link = getattr(request, "share_link", None)
    if link is not None:
        return {
            "share_form": None,
            "share_scope": link.kind,
            "share_copy_url": shared_address(request, link),
        }
    match = getattr(request, "resolver_match", None)
    user = getattr(request, "user", None)
    can_share = bool(
        user is not None
        and user.is_authenticated
        and match is not None
        and match.namespace == "runs"
        and match.url_name in SHAREABLE
    )
    context: dict[str, object] = {"share_form": None, "share_scope": "", "share_copy_url": ""}
    if can_share:
        context["share_form"] = ShareForm(initial={"path": request.get_full_path()})
    return context
