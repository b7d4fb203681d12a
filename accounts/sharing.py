"""Creating share links for dashboard views."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from django.contrib.auth.models import AbstractBaseUser
from django.urls import Resolver404, resolve, reverse
from django.utils import timezone

from runs.models import Skill

from .models import ShareLink

#: Which dashboard views can be shared, i.e. the ones that belong to one skill.
SHAREABLE = {kind.value for kind in ShareLink.Kind}


class NotShareable(ValueError):
    """The address is not a view a share link can open."""


@dataclass(frozen=True)
class CreatedLink:
    link: ShareLink
    #: The plain token; shown once, never stored.
    secret: str


def share_view(
    *, creator: AbstractBaseUser, address: str, expires_in_days: int | None = None
) -> CreatedLink:
    """A new share link to the dashboard view at `address` (a path with its query)."""
    parts = urlsplit(address)
    if parts.scheme or parts.netloc:
        raise NotShareable("only addresses on this site can be shared")
    # The address is what the browser sent (request.get_full_path(): "/skills/caf%C3%A9-helper/").
    # Django resolves the decoded path, and so must this: resolving the encoded one looked for
    # a skill named "caf%C3%A9-helper", and the Share button refused every non-ASCII name.
    path = unquote(parts.path) or "/"
    try:
        match = resolve(path)
    except Resolver404:
        raise NotShareable(f"{path} is not a page of this site") from None
    if match.namespace != "runs" or match.url_name not in SHAREABLE:
        raise NotShareable(f"{path} cannot be shared: share a skill, iteration, eval or run")
    skill = Skill.objects.filter(name=match.kwargs["skill"]).first()
    if skill is None:
        raise NotShareable(f"no skill named “{match.kwargs['skill']}”")
    kind = ShareLink.Kind(match.url_name)
    scope = {key: str(match.kwargs[key]) for key in ShareLink.SCOPE_KEYS[kind]}
    # Re-encoded from the decoded parts, so the link opens the same page however the
    # address was spelled (encoded, raw Unicode, a literal "%25").
    canonical = reverse(f"runs:{kind}", kwargs=match.kwargs)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = ""
    if kind == ShareLink.Kind.COMPARE:
        # Compared as a dict by ShareLink.covers: blanks dropped, as the opened address has them.
        query = urlencode(sorted((key, value) for key, value in pairs if value))
    link = ShareLink(
        creator=creator,
        skill=skill,
        kind=kind,
        scope=scope,
        query=query,
        path=canonical + (f"?{query}" if query else ""),
    )
    if kind != ShareLink.Kind.COMPARE and pairs:
        # Filters on a page are part of what was shared: the link opens the filtered view.
        link.path = f"{canonical}?{urlencode(pairs)}"
    if expires_in_days:
        link.expires_at = timezone.now() + timedelta(days=expires_in_days)
    secret = link.set_secret()
    link.save()
    return CreatedLink(link=link, secret=secret)
