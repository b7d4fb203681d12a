"""What one imported iteration came to, for CI: read once, rendered as Markdown or JUnit.

The figures are the pages' own: `summarise_iterations` for the verdict and delta,
`compare` with the previous iteration in display order for the evals that improved or
regressed (the badges the compare page shows and `runevals --fail-on-regression` reads).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.db.models.fields.json import KT
from django.urls import reverse

from .. import stats
from ..models import Iteration, Run
from ..names import natural_key
from ..reading.compare import compare
from ..reading.samples import assertion_tallies
from ..reading.summaries import IterationSummary, summarise_iterations

#: (eval id, condition name): one test case of the JUnit file.
CellKey = tuple[str, str]


@dataclass(frozen=True)
class IterationOutcome:
    """One iteration as CI reports it: no database behind it, so rendering is pure."""

    summary: IterationSummary
    #: The iteration before it in display order, if any: what "since" means.
    previous: Iteration | None
    #: Eval ids whose treatment score changed significantly since `previous` (Holm), in
    #: natural order, each with its change.
    improved: list[stats.EvalChange] = field(default_factory=list)
    regressed: list[stats.EvalChange] = field(default_factory=list)
    #: eval id → what a person reads, where it differs from the id.
    names: dict[str, str] = field(default_factory=dict)
    #: (eval, condition) → (assertion id, runs it failed in, graded runs), assertions that
    #: failed in at least one graded run (reviewers' overrides count).
    failed: dict[CellKey, list[tuple[str, int, int]]] = field(default_factory=dict)
    #: (eval, condition) → (run index, what failed) of each errored run.
    errors: dict[CellKey, list[tuple[int, str]]] = field(default_factory=dict)
    #: A read-only share link to the iteration (absolute), when one was made for this.
    share_url: str = ""

    @property
    def iteration(self) -> Iteration:
        return self.summary.iteration

    @property
    def skill(self) -> str:
        return self.iteration.skill.name

    @property
    def iteration_path(self) -> str:
        return self.iteration.get_absolute_url()

    @property
    def compare_path(self) -> str | None:
        """The compare page of the previous iteration with this one; None for the first."""
        if self.previous is None:
            return None
        query = urlencode({"a": self.previous.number, "b": self.iteration.number})
        return f"{reverse('runs:compare', args=[self.skill])}?{query}"

    @property
    def regressed_ids(self) -> set[str]:
        return {change.eval_id for change in self.regressed}

    def name(self, eval_id: str) -> str:
        return self.names.get(eval_id) or eval_id


def iteration_outcomes(
    iterations: Sequence[Iteration], *, share_urls: dict[int, str] | None = None
) -> list[IterationOutcome]:
    """Each iteration's outcome, in the order given; `share_urls` by iteration pk."""
    summaries = summarise_iterations(list(iterations))
    return [
        _outcome(iteration, summaries[iteration.pk], (share_urls or {}).get(iteration.pk, ""))
        for iteration in iterations
    ]


def _outcome(iteration: Iteration, summary: IterationSummary, share_url: str) -> IterationOutcome:
    previous = iteration.previous()
    improved: list[stats.EvalChange] = []
    regressed: list[stats.EvalChange] = []
    names: dict[str, str] = {}
    if previous is not None:
        comparison = compare(previous, iteration)
        names = comparison.names
        for change in sorted(comparison.result.evals, key=lambda c: natural_key(c.eval_id)):
            if change.badge == "improved":
                improved.append(change)
            elif change.badge == "regressed":
                regressed.append(change)
    failed: dict[CellKey, list[tuple[str, int, int]]] = defaultdict(list)
    for tally in assertion_tallies(iteration):
        if tally.passed < tally.runs:
            failed[tally.eval_id, tally.condition].append(
                (tally.assertion_id, tally.runs - tally.passed, tally.runs)
            )
    errors: dict[CellKey, list[tuple[int, str]]] = defaultdict(list)
    errored = (
        Run.objects.filter(iteration=iteration, status="errored")
        .order_by("eval_id", "condition__name", "run_index")
        # Only the one line error.json gave, not the run's other artifacts.
        .values_list("eval_id", "condition__name", "run_index", KT("artifacts__error__error"))
    )
    for eval_id, condition, run_index, message in errored:
        errors[eval_id, condition].append((run_index, message or "the run errored"))
    return IterationOutcome(
        summary=summary,
        previous=previous,
        improved=improved,
        regressed=regressed,
        names=names,
        failed=dict(failed),
        errors=dict(errors),
        share_url=share_url,
    )
