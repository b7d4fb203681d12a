"""`--summary FILE`, `--junit FILE` and `--share-as USER` for the commands that import.

runevals and importworkspace add these options with `add_report_arguments` and call
`write_reports` with the iterations they imported; `-` writes to standard output.
"""

from __future__ import annotations

from argparse import _ArgumentGroup
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser, OutputWrapper
from django.urls import reverse

from accounts.sharing import share_view

from ..models import Iteration
from .junit import junit_xml
from .outcome import iteration_outcomes
from .summary import summary_markdown

#: How long a share link made for a pull-request comment opens the iteration.
SHARE_DAYS = 30


def add_report_arguments(parser: CommandParser | _ArgumentGroup) -> None:
    parser.add_argument(
        "--summary",
        metavar="FILE",
        help="write a Markdown summary of each imported iteration for a pull-request comment "
        "(- for stdout); links use EVALSITE_SITE_URL",
    )
    parser.add_argument(
        "--junit",
        metavar="FILE",
        help="write JUnit XML: a test case per eval × condition (- for stdout)",
    )
    parser.add_argument(
        "--share-as",
        metavar="USERNAME",
        help=f"with --summary: link a read-only share link ({SHARE_DAYS} days) to each "
        "iteration, made by this user",
    )


def check_report_arguments(options: dict[str, Any], *, returncode: int = 1) -> None:
    """CommandError for options that cannot work, before anything is run or imported."""
    if options["share_as"] and not options["summary"]:
        raise CommandError("--share-as: only with --summary", returncode=returncode)
    if options["share_as"]:
        _user(options["share_as"], returncode)


def write_reports(
    iterations: Sequence[Iteration],
    options: dict[str, Any],
    stdout: OutputWrapper,
    *,
    returncode: int = 1,
) -> None:
    """Write the files the options ask for, about `iterations` (in that order)."""
    summary, junit, share_as = options["summary"], options["junit"], options["share_as"]
    if not (summary or junit):
        return
    creator = _user(share_as, returncode) if share_as and summary else None
    base_url = settings.EVALSITE_SITE_URL
    share_urls = {}
    if creator is not None:
        for iteration in iterations:
            created = share_view(
                creator=creator, address=iteration.get_absolute_url(), expires_in_days=SHARE_DAYS
            )
            share_urls[iteration.pk] = base_url + reverse("share", args=[created.secret])
    outcomes = iteration_outcomes(iterations, share_urls=share_urls)
    if summary:
        text = summary_markdown(outcomes, base_url=base_url).encode()
        _write(summary, text, stdout, returncode)
    if junit:
        _write(junit, junit_xml(outcomes), stdout, returncode)


def _user(username: str, returncode: int) -> Any:
    found = get_user_model().objects.filter(username=username, is_active=True).first()
    if found is None:
        raise CommandError(f"--share-as: no active user named {username!r}", returncode=returncode)
    return found


def _write(target: str, content: bytes, stdout: OutputWrapper, returncode: int) -> None:
    if target == "-":
        stdout.write(content.decode(), ending="")
        return
    try:
        Path(target).write_bytes(content)
    except OSError as exc:
        message = f"{target}: cannot write ({exc.strerror})"
        raise CommandError(message, returncode=returncode) from None
