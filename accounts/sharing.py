"""Creating share links for dashboard views."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve, reverse
from django.utils import timezone

from .models import ShareLink, digest

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
        raise NotShareable(
            f"{path} cannot be shared: share a skill, iteration, eval, run or trigger iteration"
        )
    skills = ShareLink._meta.get_field("skill").related_model
    skill = skills.objects.filter(name=match.kwargs["skill"]).first()
    if skill is None:
        raise NotShareable(f"no skill named “{match.kwargs['skill']}”")
    kind = ShareLink.Kind(match.url_name)
    scope = {key: str(match.kwargs[key]) for key in ShareLink.SCOPE_KEYS[kind]}
    # Re-encoded from the decoded parts, so the link opens the same page however the
    # address was spelled (encoded, raw Unicode, a literal "%25").
    canonical = reverse(f"runs:{kind}", kwargs=match.kwargs)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = ""
    if kind in ShareLink.COMPARISONS:
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
    if kind not in ShareLink.COMPARISONS and pairs:
        # Filters on a page are part of what was shared: the link opens the filtered view.
        link.path = f"{canonical}?{urlencode(pairs)}"
    if expires_in_days:
        link.expires_at = timezone.now() + timedelta(days=expires_in_days)
    secret = link.set_secret()
    link.save()
    return CreatedLink(link=link, secret=secret)


#: Cookie holding the tokens of the share links this browser opened ("pk:token,…"), so that
#: "Copy link" in a shared view can copy a link that works for the next person. The database
#: keeps only digests; this browser had the token already (it opened /s/<token>/).
SECRETS_COOKIE = "evalsite_shares"
#: Links remembered per browser, newest first.
SECRETS_KEPT = 20


def _secrets(request: HttpRequest) -> dict[int, str]:
    pairs: dict[int, str] = {}
    for item in request.COOKIES.get(SECRETS_COOKIE, "").split(","):
        pk, _, secret = item.partition(":")
        if pk.isdigit() and secret:
            pairs.setdefault(int(pk), secret)
    return pairs


def remember_secret(
    request: HttpRequest, response: HttpResponse, link: ShareLink, secret: str
) -> None:
    """Keep the link's token in this browser's cookie (HttpOnly, like the session's)."""
    kept = {link.pk: secret, **{pk: s for pk, s in _secrets(request).items() if pk != link.pk}}
    value = ",".join(f"{pk}:{s}" for pk, s in list(kept.items())[:SECRETS_KEPT])
    response.set_cookie(
        SECRETS_COOKIE,
        value,
        max_age=settings.SESSION_COOKIE_AGE,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


def shared_address(request: HttpRequest, link: ShareLink) -> str:
    """The share link that opens the page being viewed, for "Copy link"; "" if unknown.

    `/s/<token>/` opens the shared view; `?to=` adds the page beneath it being looked at.
    """
    secret = _secrets(request).get(link.pk)
    if not secret or digest(secret) != link.digest:
        return ""
    address = reverse("share", args=[secret])
    here = request.get_full_path()
    if here != link.path and link.opens(here):
        address += "?" + urlencode({"to": here})
    return request.build_absolute_uri(address)
