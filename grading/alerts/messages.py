"""What an alert says, and how each channel says it.

An `Alert` is built from what runevals knows (an iteration's report, a failure's one line,
the budget's reason), with absolute links made from EVALSITE_SITE_URL; `slack_payload`,
`json_payload` and `email_message` render it. Everything agents or errors wrote is
escaped for the channel (Slack's mrkdwn would otherwise turn `<!channel>` into a ping).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse

from runs.models import Iteration
from runs.stats import Interval, format_interval, signed

from .redaction import redact

#: The events alerts are sent for, as their messages name them.
EVENTS = {
    "regression": "regression",
    "failed": "campaign failed",
    "budget_stopped": "stopped by its budget",
    "test": "test alert",
}


@dataclass(frozen=True)
class Alert:
    """One event of one skill, said the same way on every channel."""

    event: str
    skill: str
    #: What changed, in one line: "demo #3 (iteration-3): regression: delta −0.25 (…)".
    headline: str
    #: Further lines: the verdict, the regressed evals, the reason.
    details: tuple[str, ...] = ()
    iteration: int | None = None
    label: str = ""
    verdict: str = ""
    delta: float | None = None
    interval: tuple[float, float] | None = None
    regressed_evals: tuple[str, ...] = ()
    reason: str = ""
    #: Link text → absolute URL (the compare page first).
    links: dict[str, str] = field(default_factory=dict)

    @property
    def compare_url(self) -> str:
        return next((url for text, url in self.links.items() if text.startswith("Compare")), "")


def absolute(path: str) -> str:
    """The address people open: EVALSITE_SITE_URL + path (only the path when it is unset)."""
    return f"{getattr(settings, 'EVALSITE_SITE_URL', '')}{path}"


def compare_url(skill: str, before: int, after: int) -> str:
    query = urlencode({"a": before, "b": after})
    return absolute(f"{reverse('runs:compare', args=[skill])}?{query}")


def regression_alert(report: dict[str, Any], *, event: str = "regression") -> Alert:
    """The alert for an imported iteration's report (report.iteration_report): its delta and
    interval, its verdict, the evals that regressed since the previous iteration, links."""
    skill, number = report["skill"], report["iteration"]
    iteration = (
        Iteration.objects.filter(skill__name=skill, number=number).select_related("skill").first()
    )
    previous = iteration.previous() if iteration is not None else None
    links = {}
    if previous is not None:
        links[f"Compare #{previous.number} → #{number}"] = compare_url(
            skill, previous.number, number
        )
    if iteration is not None:
        links[f"Iteration #{number}"] = absolute(iteration.get_absolute_url())
    interval = tuple(report["delta_interval"]) if report.get("delta_interval") else None
    change = []
    if report.get("delta") is not None:
        change.append(f"delta {signed(report['delta'])}")
        if interval:
            change[-1] += f" (95% CI {format_interval(Interval(*interval))})"
    regressed = tuple(report.get("regressed_evals") or ())
    details = [f"Verdict: {report['verdict']}"]
    if regressed:
        since = f" since #{previous.number}" if previous is not None else ""
        details.append(f"Regressed{since}: {', '.join(regressed)}")
    details.append(f"{report['runs']} runs, {report['errored']} errored, {report['tokens']} tokens")
    what = EVENTS[event]
    return Alert(
        event=event,
        skill=skill,
        headline=f"{skill} #{number} ({report['label']}): {what}"
        + (f": {', '.join(change)}" if change else ""),
        details=tuple(redact(line) for line in details),
        iteration=number,
        label=report["label"],
        verdict=report["verdict"],
        delta=report.get("delta"),
        interval=interval,  # type: ignore[arg-type]
        regressed_evals=regressed,
        links=links,
    )


def failure_alert(skill: str, reason: str, *, label: str = "", campaign_path: str = "") -> Alert:
    """A campaign (or one queued iteration of it) that failed: what stopped it, in one line."""
    reason = redact(reason)
    links = {"Skill": absolute(reverse("runs:skill", args=[skill]))}
    if campaign_path:
        links = {"Campaign": absolute(campaign_path), **links}
    where = f"{skill} {label}" if label else skill
    return Alert(
        event="failed",
        skill=skill,
        headline=f"{where}: campaign failed: {reason}",
        reason=reason,
        label=label,
        links=links,
    )


def budget_alert(skill: str, reason: str, report: dict[str, Any] | None) -> Alert:
    """A campaign the budget stopped: why, and what was imported of the skill all the same."""
    reason = redact(reason)
    if report is None:
        return Alert(
            event="budget_stopped",
            skill=skill,
            headline=f"{skill}: stopped by its budget: {reason}",
            reason=reason,
            links={"Skill": absolute(reverse("runs:skill", args=[skill]))},
        )
    imported = regression_alert(report, event="budget_stopped")
    return replace(imported, headline=f"{imported.headline}; {reason}", reason=reason)


def trial_alert(skill: str) -> Alert:
    """The alerts page's test message: it says nothing happened, only where alerts go."""
    return Alert(
        event="test",
        skill=skill,
        headline=f"{skill}: test alert: alerts of this skill reach this destination",
        links={"Alerts": absolute(reverse("alerts:skill", args=[skill]))},
    )


# --- channels ----------------------------------------------------------------------------


def mrkdwn(text: str) -> str:
    """Text for Slack's mrkdwn: `&`, `<` and `>` escaped, so no link, mention or ping."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_payload(alert: Alert) -> dict[str, Any]:
    """An incoming-webhook message: `text` (notifications, clients without blocks) and blocks."""
    body = "\n".join([f"*{mrkdwn(alert.headline)}*", *(mrkdwn(line) for line in alert.details)])
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": body}}]
    linked = [
        f"<{mrkdwn(url)}|{mrkdwn(text)}>" for text, url in alert.links.items() if "://" in url
    ]
    if linked:
        blocks.append(
            {"type": "context", "elements": [{"type": "mrkdwn", "text": " · ".join(linked)}]}
        )
    text = f"evalsite: {alert.headline}"
    if alert.compare_url:
        text += f" {alert.compare_url}"
    return {"text": mrkdwn(text), "blocks": blocks}


def json_payload(alert: Alert) -> dict[str, Any]:
    """The generic form, for any receiver: the event and its figures as fields."""
    return {
        "source": "evalsite",
        "event": alert.event,
        "skill": alert.skill,
        "iteration": alert.iteration,
        "label": alert.label,
        "verdict": alert.verdict,
        "delta": alert.delta,
        "delta_interval": list(alert.interval) if alert.interval else None,
        "regressed_evals": list(alert.regressed_evals),
        "reason": alert.reason,
        "text": alert.headline,
        "details": list(alert.details),
        "compare_url": alert.compare_url,
        "links": alert.links,
    }


def email_message(alert: Alert) -> tuple[str, str]:
    """(subject, plain-text body)."""
    subject = f"[evalsite] {alert.headline}"
    if len(subject) > 200:
        subject = subject[:199] + "…"
    lines = [alert.headline, "", *alert.details]
    if alert.links:
        lines += ["", *(f"{text}: {url}" for text, url in alert.links.items())]
    lines += [
        "",
        "Sent by evalsite's alerts (EVALSITE_ALERT_* settings, or the skill's alerts page).",
    ]
    return subject, "\n".join(lines) + "\n"
