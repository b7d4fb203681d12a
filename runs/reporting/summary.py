"""The pull-request summary: Markdown a CI job posts as one sticky comment per skill.

Its first line is a marker (an HTML comment naming the skills) that a workflow finds the
comment by, to edit it instead of adding one per push. Everything agents or authors wrote
(skill, eval and condition names, labels) goes into code spans, where GitHub renders no
link, image, HTML or @mention; links are only the site's own addresses. Iterations are
"iteration 7", never "#7", which GitHub would link to issue 7.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import quote

from .. import stats
from ..stats.verdicts import MIN_EVALS, unsigned
from .outcome import IterationOutcome

MARKER_PREFIX = "<!-- evalsite-summary"
#: Evals listed by name under "improved"/"regressed" before "and N more".
LISTED_EVALS = 20


def marker(skills: Sequence[str]) -> str:
    """The first line: the same for every push of a pull request that runs these skills.

    Names percent-encoded, so no name can close the comment (`-->`) or span two lines.
    """
    names = ",".join(quote(name, safe="") for name in sorted(set(skills)))
    return f"{MARKER_PREFIX} skill={names} -->"


def code(text: str) -> str:
    """`text` as a Markdown code span: shown as written, never read as Markdown or HTML."""
    text = " ".join(text.splitlines())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def link(text: str, url: str) -> str:
    """A Markdown link to one of the site's addresses. `text` is ours, never an agent's;
    parentheses (which Django leaves in a name's path) are encoded so they cannot end it."""
    return f"[{text}]({url.replace('(', '%28').replace(')', '%29').replace(' ', '%20')})"


def summary_markdown(outcomes: Sequence[IterationOutcome], *, base_url: str = "") -> str:
    """The comment for these iterations: the marker, then a section per iteration.

    `base_url` ("https://evals.example.com") makes the links absolute; without it they
    are the site's paths.
    """
    lines = [marker([outcome.skill for outcome in outcomes])]
    if not outcomes:
        lines += ["### evalsite", "", "Nothing was imported, so there is nothing to report."]
    for outcome in outcomes:
        lines += ["", *_section(outcome, base_url.rstrip("/"))]
    return "\n".join(lines) + "\n"


def _section(outcome: IterationOutcome, base_url: str) -> list[str]:
    iteration, summary = outcome.iteration, outcome.summary
    runs = sum(c.runs for c in summary.conditions)
    errored = sum(c.errored for c in summary.conditions)
    lines = [
        f"### evalsite: {code(outcome.skill)} iteration {iteration.number} "
        f"({code(iteration.label)})",
        "",
        f"**Verdict:** {_verdict(outcome)}",
        "",
        f"**Delta (treatment − control):** {_delta(outcome)}",
        "",
        *_since(outcome),
        "",
        f"{stats.count_phrase(runs, 'run')} ({errored} errored) over "
        f"{stats.count_phrase(len(summary.evals))}.",
        "",
        " · ".join(_links(outcome, base_url)),
    ]
    return lines


def _verdict(outcome: IterationOutcome) -> str:
    # The summary's verdict, with the condition names (which sources choose) as code.
    summary = outcome.summary
    if summary.treatment and summary.control:
        return stats.delta_verdict(
            summary.delta,
            treatment=code(summary.treatment.name),
            control=code(summary.control.name),
        )
    if summary.conditions:
        return f"only {code(summary.conditions[0].name)} ran: nothing to compare it with"
    return "no runs"


def _delta(outcome: IterationOutcome) -> str:
    summary = outcome.summary
    delta = summary.delta
    if delta is None:
        if not (summary.treatment and summary.control):
            return "none: the iteration has no treatment and control to subtract"
        return "none: no eval has graded runs in both conditions"
    if delta.interval is None:
        shown = f"{stats.signed(delta.mean)}, no interval: {stats.count_phrase(delta.n)} in both"
        return f"{shown}, at least {MIN_EVALS} needed"
    text = f"{stats.signed(delta.mean)} (95% CI {stats.format_interval(delta.interval)})"
    note = summary.power_note
    return f"{text}. {note}" if note else text


def _since(outcome: IterationOutcome) -> list[str]:
    previous = outcome.previous
    if previous is None:
        return ["**Since the previous iteration:** none, this is the skill's first."]
    lines = [
        f"**Since iteration {previous.number}:** {len(outcome.improved)} improved, "
        f"{len(outcome.regressed)} regressed (treatment score, Holm-corrected)."
    ]
    for word, changes in (("Regressed", outcome.regressed), ("Improved", outcome.improved)):
        if not changes:
            continue
        lines.append("")
        lines.append(f"{word}:")
        for change in changes[:LISTED_EVALS]:
            lines.append(f"- {_eval(outcome, change)}")
        if len(changes) > LISTED_EVALS:
            lines.append(f"- and {len(changes) - LISTED_EVALS} more")
    return lines


def _eval(outcome: IterationOutcome, change: stats.EvalChange) -> str:
    name = outcome.name(change.eval_id)
    shown = code(change.eval_id)
    if name != change.eval_id:
        shown = f"{code(name)} ({shown})"
    before, after = change.treatment_before, change.treatment_after
    if before is None or after is None:
        return shown
    return f"{shown}: {unsigned(before)} → {unsigned(after)}"


def _links(outcome: IterationOutcome, base_url: str) -> list[str]:
    links = [link(f"Iteration {outcome.iteration.number}", base_url + outcome.iteration_path)]
    if outcome.compare_path and outcome.previous is not None:
        text = f"Compare with iteration {outcome.previous.number}"
        links.append(link(text, base_url + outcome.compare_path))
    if outcome.share_url:
        links.append(link("Read-only share link", outcome.share_url))
    return links
