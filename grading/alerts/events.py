"""What the campaign workflow and the workers call when something is worth an alert.

Each takes what runevals already has (an iteration's report, a failure's line, the budget's
reason) and never raises: an alert that cannot be built or delivered is a warning line, and
the campaign's outcome and exit status stay what they were.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from typing import Any, ParamSpec

from .delivery import failure_line, notify
from .messages import budget_alert, failure_alert, regression_alert

log = logging.getLogger(__name__)

P = ParamSpec("P")
Warn = Callable[[str], None] | None


def never_raises(send: Callable[P, None]) -> Callable[P, None]:
    @functools.wraps(send)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            send(*args, **kwargs)
        except Exception as exc:  # an alert is never why a campaign fails
            log.exception("alert not sent")
            failure_line(f"alert not sent: {type(exc).__name__}: {exc}", kwargs.get("warn"))  # type: ignore[arg-type]

    return guarded


@never_raises
def alert_imported(report: dict[str, Any], *, warn: Warn = None) -> None:
    """A regression alert if the imported iteration regressed (--fail-on-regression's rule)."""
    if report.get("regression"):
        notify(regression_alert(report), warn=warn)


@never_raises
def alert_failed(
    skills: Iterable[str],
    reason: str,
    *,
    label: str = "",
    campaign_path: str = "",
    warn: Warn = None,
) -> None:
    """A failure alert to each skill's destinations (and the site's, once per skill)."""
    for skill in dict.fromkeys(skills):
        notify(failure_alert(skill, reason, label=label, campaign_path=campaign_path), warn=warn)


@never_raises
def alert_budget_stopped(
    reason: str, *, skills: Iterable[str], reports: Iterable[dict[str, Any]], warn: Warn = None
) -> None:
    """One alert per skill of a campaign its budget stopped, with what it imported."""
    by_skill = {report["skill"]: report for report in reports}
    for skill in dict.fromkeys([*skills, *by_skill]):
        notify(budget_alert(skill, reason, by_skill.get(skill)), warn=warn)
