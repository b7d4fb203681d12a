"""The account page (API tokens, share links) and the share-link opener."""

from __future__ import annotations

import hashlib
import unicodedata
from datetime import timedelta

from django import forms
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from .forms import ShareForm, TokenForm
from .middleware import remember
from .models import ApiToken, ShareLink
from .sharing import NotShareable, remember_secret, share_view

#: Failed logins allowed per username and address within LOGIN_WINDOW seconds.
LOGIN_ATTEMPTS = 10
LOGIN_WINDOW = 15 * 60


class LoginView(auth_views.LoginView):
    """Django's login, refusing a username and address after LOGIN_ATTEMPTS failures.

    Counted in the cache: per process with the default local-memory cache (a site with
    several workers then allows that many attempts per worker), shared with REDIS_URL.
    """

    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        if (cache.get(self._throttle_key()) or 0) >= LOGIN_ATTEMPTS:
            form = self.get_form()
            form.errors.clear()
            form.add_error(None, "Too many failed logins: wait 15 minutes and try again.")
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: forms.Form) -> HttpResponse:
        key = self._throttle_key()
        cache.add(key, 0, LOGIN_WINDOW)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, LOGIN_WINDOW)
        return super().form_invalid(form)

    def _throttle_key(self) -> str:
        address = self.request.META.get("REMOTE_ADDR", "")
        username = throttled_name(self.request.POST.get("username") or "")
        digest = hashlib.sha256(f"{username}|{address}".encode()).hexdigest()
        return f"evalsite:login-failures:{digest}"


def throttled_name(username: str) -> str:
    """The name failures are counted under: every spelling the login reads as one user counts
    as one.

    The login form NFKC-normalises the username (fullwidth "ａｄｍｉｎ" logs in as "admin"), so
    the count must too, or each spelling gets 10 tries of its own; case-folded as well, and
    normalised again because folding can undo NFKC ("ǰ" folds to "j" and a combining caron).
    """
    folded = unicodedata.normalize("NFKC", username.strip()).casefold()
    return unicodedata.normalize("NFKC", folded)


@require_GET
def account(request: HttpRequest) -> HttpResponse:
    return render(request, "accounts/account.html", _account_context(request))


def _account_context(request: HttpRequest, **extra: object) -> dict[str, object]:
    return {
        "tokens": ApiToken.objects.filter(user=request.user),
        "links": ShareLink.objects.filter(creator=request.user).select_related("skill"),
        "token_form": TokenForm(),
        **extra,
    }


@require_POST
def create_token(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST)
    if not form.is_valid():
        return render(
            request, "accounts/account.html", _account_context(request, token_form=form), status=400
        )
    token = ApiToken(user=request.user, name=form.cleaned_data["name"])
    if form.cleaned_data["expires"]:
        token.expires_at = timezone.now() + timedelta(days=form.cleaned_data["expires"])
    secret = token.set_secret()
    token.save()
    return render(
        request,
        "accounts/account.html",
        _account_context(request, new_token=token, new_secret=secret),
    )


@require_POST
def revoke_token(request: HttpRequest, pk: int) -> HttpResponse:
    get_object_or_404(ApiToken, pk=pk, user=request.user).revoke()
    return redirect("accounts:account")


@require_POST
def create_share(request: HttpRequest) -> HttpResponse:
    form = ShareForm(request.POST)
    error = ""
    if form.is_valid():
        try:
            created = share_view(
                creator=request.user,
                address=form.cleaned_data["path"],
                expires_in_days=form.cleaned_data["expires"],
            )
        except NotShareable as exc:
            error = str(exc)
        else:
            url = request.build_absolute_uri(reverse("share", args=[created.secret]))
            return render(
                request, "accounts/share_created.html", {"link": created.link, "url": url}
            )
    else:
        error = "; ".join(f"{field}: {', '.join(errs)}" for field, errs in form.errors.items())
    return render(request, "accounts/share_error.html", {"error": error}, status=400)


@require_POST
def revoke_share(request: HttpRequest, pk: int) -> HttpResponse:
    get_object_or_404(ShareLink, pk=pk, creator=request.user).revoke()
    return redirect("accounts:account")


@login_not_required
@require_GET
def open_share(request: HttpRequest, token: str) -> HttpResponse:
    """Open a share link: remember it in this browser's session, then show the shared view.

    `?to=` names a page inside the link's scope to open instead (what "Copy link" in a
    shared view copies); anything else opens the shared view itself.
    """
    link = ShareLink.objects.find(token)
    if link is None:
        return render(request, "accounts/share_invalid.html", status=404)
    remember(request, link)
    link.touch()
    target = request.GET.get("to", "")
    response = redirect(target if target and link.opens(target) else link.path)
    remember_secret(request, response, link, token)
    return response
