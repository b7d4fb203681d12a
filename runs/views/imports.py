"""Uploading a workspace archive through the browser: a preview first, or the import at once."""

from __future__ import annotations

from typing import NamedTuple

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from ..importing import (
    ImportFailure,
    ImportReport,
    Staged,
    UploadTooLarge,
    import_staged,
    import_upload,
    stage_upload,
)


class UploadForm(forms.Form):
    archive = forms.FileField(
        help_text="A .zip or .tar.gz of a workspace, iteration or skill folder"
    )
    dry_run = forms.BooleanField(required=False, label="Dry run: check it, save nothing")
    keep_going = forms.BooleanField(
        required=False,
        label="Keep going: import each valid iteration, list the rejected ones",
    )


class ConfirmForm(forms.Form):
    """The import of an archive staged by a preview, named by its token."""

    token = forms.CharField(max_length=22)
    keep_going = forms.BooleanField(required=False)


#: Session key: the stages this session previewed (token → archive name).
STAGED = "evalsite_staged_uploads"


class Attempt(NamedTuple):
    """What a request to the import page came to: the import's report, or an error."""

    report: ImportReport | None = None
    error: str = ""
    status: int = 200
    #: The archive a preview staged, which the page offers to import.
    staged: Staged | None = None


@require_http_methods(["GET", "POST"])
def import_page(request: HttpRequest) -> HttpResponse:
    """Upload a workspace archive through the browser: a preview of the plan first (the
    archive staged), then the import on confirmation; or at once; the report, or its error."""
    attempt, form = Attempt(), UploadForm()
    if request.method == "POST" and "token" in request.POST:
        attempt = _confirm(request)
    elif request.method == "POST":
        form = UploadForm(request.POST, request.FILES)
        attempt = _upload(request, form) if form.is_valid() else Attempt(status=400)
    context = {
        "form": form,
        "report": attempt.report,
        "error": attempt.error,
        "staged": attempt.staged,
        "keep_going": form["keep_going"].value(),
    }
    return render(request, "runs/import.html", context, status=attempt.status)


def _upload(request: HttpRequest, form: UploadForm) -> Attempt:
    """Preview the valid upload (staged, for this session to confirm) or import it."""
    archive, keep_going = form.cleaned_data["archive"], form.cleaned_data["keep_going"]
    try:
        if request.POST.get("action") != "preview":
            dry_run = form.cleaned_data["dry_run"]
            return Attempt(import_upload(archive, dry_run=dry_run, keep_going=keep_going))
        staged = stage_upload(archive)
        request.session[STAGED] = {**request.session.get(STAGED, {}), staged.token: staged.name}
        report = import_staged(staged, dry_run=True, keep_going=keep_going)
    except ImportFailure as exc:
        return Attempt(error=exc.message, status=413 if isinstance(exc, UploadTooLarge) else 400)
    return Attempt(report, staged=staged)


def _confirm(request: HttpRequest) -> Attempt:
    """Import the staged archive a preview of this session named."""
    confirm = ConfirmForm(request.POST)
    known: dict[str, str] = request.session.get(STAGED, {})
    if not confirm.is_valid() or confirm.cleaned_data["token"] not in known:
        error = "This preview is not yours or has expired: upload the archive again."
        return Attempt(error=error, status=400)
    token = confirm.cleaned_data["token"]
    request.session[STAGED] = {k: v for k, v in known.items() if k != token}
    try:
        report = import_staged(
            Staged(token, known[token]),
            dry_run=False,
            keep_going=confirm.cleaned_data["keep_going"],
        )
    except ImportFailure as exc:
        return Attempt(error=exc.message, status=400)
    return Attempt(report)
