"""Who may read what: read-only share links scoped to one view, and per-user API tokens.

Both kinds of secret are stored as SHA-256 digests only: the plain token is shown once, when it
is created, so a leaked database does not leak working links or tokens.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from django.conf import settings
from django.db import models
from django.urls import Resolver404, resolve, reverse
from django.utils import timezone


def new_secret() -> str:
    """An unguessable URL-safe token (256 bits)."""
    return secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class SecretQuerySet(models.QuerySet):
    def active(self) -> SecretQuerySet:
        """The ones not revoked and not expired."""
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )

    def find(self, secret: str) -> Any:
        """The active row whose digest matches `secret`, or None."""
        if not secret:
            return None
        return self.active().filter(digest=digest(secret)).first()


class Secret(models.Model):
    digest = models.CharField(max_length=64, unique=True, editable=False)
    #: The first characters of the token, so a person can tell their tokens apart.
    prefix = models.CharField(max_length=8, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = SecretQuerySet.as_manager()

    class Meta:
        abstract = True

    def set_secret(self) -> str:
        """Give the row a fresh token; returns the plain token, which is not stored."""
        secret = new_secret()
        self.digest = digest(secret)
        self.prefix = secret[:8]
        return secret

    @property
    def state(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= timezone.now():
            return "expired"
        return "active"

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])

    def touch(self) -> None:
        """Record a use, at most once a minute so reads do not turn into writes."""
        now = timezone.now()
        if self.last_used_at is None or (now - self.last_used_at).total_seconds() > 60:
            type(self).objects.filter(pk=self.pk).update(last_used_at=now)
            self.last_used_at = now


class ApiToken(Secret):
    """A user's token for the JSON API (`Authorization: Bearer <token>`)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. “CI”.")

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.user}"


class ShareLink(Secret):
    """A read-only link to one view of one skill and the views beneath it.

    `kind` is the URL name of the shared view. A skill link opens the skill's pages, its
    trigger pages among them; an iteration link that iteration, its evals and runs; an eval
    link the eval and its runs; a run link the run and its conversation; a trigger link that
    trigger iteration; a comparison link (of iterations or of descriptions) that comparison
    only, with the same query. Never another skill, the admin, the API, or anything but GET.
    """

    class Kind(models.TextChoices):
        SKILL = "skill", "skill"
        ITERATION = "iteration", "iteration"
        COMPARE = "compare", "comparison"
        EVAL = "eval", "eval"
        RUN = "run", "run"
        TRIGGER = "trigger", "trigger iteration"
        TRIGGER_COMPARE = "trigger-compare", "description comparison"

    #: The URL kwargs that must match, in the order they nest.
    SCOPE_KEYS = {
        Kind.SKILL: ("skill",),
        Kind.ITERATION: ("skill", "number"),
        Kind.EVAL: ("skill", "number", "eval_id"),
        Kind.RUN: ("skill", "number", "eval_id", "condition", "run"),
        Kind.COMPARE: ("skill",),
        Kind.TRIGGER: ("skill", "number"),
        Kind.TRIGGER_COMPARE: ("skill",),
    }
    #: Kinds that open one view with one query string, nothing beneath it.
    COMPARISONS = (Kind.COMPARE, Kind.TRIGGER_COMPARE)
    #: Query keys that only arrange a comparison (its table's order, filter, all rows): a
    #: shared comparison can be sorted and filtered, never turned into another comparison.
    ARRANGING_KEYS = frozenset({"sort", "show", "rows"})
    #: The trigger-eval views. Their `number` is a trigger iteration's, not an iteration's:
    #: an iteration link to #3 must not open trigger iteration #3 of its skill.
    TRIGGER_VIEWS = frozenset({Kind.TRIGGER.value, Kind.TRIGGER_COMPARE.value})

    creator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="share_links"
    )
    # By name, not by import: runs uses accounts (logins, tokens), never the other way.
    skill = models.ForeignKey("runs.Skill", on_delete=models.CASCADE, related_name="share_links")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    #: The shared view's URL kwargs (as strings) and, for a comparison, its query string.
    scope = models.JSONField(default=dict)
    #: Text, not a bounded CharField: percent-encoded, a 200-character CJK or emoji name is
    #: 1,800 to 2,400 characters of address, and a run's address holds three names.
    query = models.TextField(blank=True)
    #: The address the link opens.
    path = models.TextField()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"share link to {self.path}"

    def covers(self, url_name: str, kwargs: Mapping[str, Any], query: Mapping[str, str]) -> bool:
        """Whether the runs view `url_name` with these kwargs and GET query is in scope."""
        keys = self.SCOPE_KEYS[self.Kind(self.kind)]
        if any(str(kwargs.get(key)) != str(self.scope.get(key)) for key in keys):
            return False
        if self.kind in self.COMPARISONS:
            asked = {k: v for k, v in query.items() if k not in self.ARRANGING_KEYS}
            shared = {k: v for k, v in self.compare_query.items() if k not in self.ARRANGING_KEYS}
            return url_name == self.kind and asked == shared
        if self.kind == self.Kind.SKILL:
            return True
        if self.kind == self.Kind.TRIGGER:
            return url_name == self.Kind.TRIGGER
        return url_name not in self.TRIGGER_VIEWS

    def opens(self, address: str) -> bool:
        """Whether the link's holder may open `address` (a path on this site, with its query).

        What the access middleware would let through, asked before a page shows a link, so a
        shared view shows only links that work inside what was shared.
        """
        parts = urlsplit(address)
        if parts.scheme or parts.netloc or not parts.path.startswith("/"):
            return False
        try:
            match = resolve(unquote(parts.path))
        except Resolver404:
            return False
        if match.namespace != "runs":
            return False
        # As the middleware reads request.GET: the last value of each key, blanks kept.
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        return self.covers(match.url_name, match.kwargs, query)

    def follow(self, *, trigger: bool, old: int, new: int) -> None:
        """Point the link at number `new` wherever it names `old` (in its scope, or as a
        comparison's `a`/`b` or one of its `iterations`): the results it was made for answer
        to `new` now. `trigger` says whose number it is, a trigger iteration's or an
        iteration's."""
        if (self.kind in self.TRIGGER_VIEWS) != trigger:
            return
        parts = urlsplit(self.path)
        match = resolve(unquote(parts.path))
        if self.kind in self.COMPARISONS:
            pairs = [
                (key, str(new) if key in ("a", "b") and value == str(old) else value)
                for key, value in parse_qsl(self.query, keep_blank_values=True)
            ]
            # Several iterations side by side: "3,5,7".
            pairs = [
                (key, ",".join(str(new) if n == str(old) else n for n in value.split(",")))
                if key == "iterations"
                else (key, value)
                for key, value in pairs
            ]
            if urlencode(pairs) == self.query:
                return
            self.query = urlencode(pairs)
            self.path = f"{parts.path}?{self.query}"
        elif str(self.scope.get("number")) == str(old):
            self.scope = {**self.scope, "number": str(new)}
            kwargs = {**match.kwargs, "number": new}
            self.path = reverse(match.view_name, kwargs=kwargs) + (
                f"?{parts.query}" if parts.query else ""
            )
        else:
            return
        self.save(update_fields=["scope", "query", "path"])

    @property
    def compare_query(self) -> dict[str, str]:
        return dict(parse_qsl(self.query))
