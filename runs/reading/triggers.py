"""Trigger evals as the pages show them: the skill page's "Triggering" panel, a trigger
iteration's queries and confusion matrix, and two descriptions compared."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import PurePosixPath
from typing import Any

from .. import charts
from ..models import Skill, TriggerIteration, TriggerQuery, TriggerRun, TriggerSet
from ..stats.scores import PairedDelta
from ..stats.triggers import (
    NONE,
    Flip,
    QueryOutcome,
    TriggerSummary,
    compare_descriptions,
    confusion,
    flipped_queries,
    summarise,
)
from ..stats.verdicts import delta_verdict
from ..warnings import messages


def outcome_of(query: TriggerQuery) -> QueryOutcome:
    """A stored query as the statistics take it."""
    return QueryOutcome.of(query)


@dataclass(frozen=True)
class Summaries:
    """A description's figures over all its queries, and over each split where one exists."""

    all: TriggerSummary
    train: TriggerSummary | None
    test: TriggerSummary | None


def _summaries(outcomes: list[QueryOutcome], threshold: float) -> Summaries:
    splits = {o.split for o in outcomes}
    train = [o for o in outcomes if o.split == "train"]
    test = [o for o in outcomes if o.split == "test"]
    return Summaries(
        summarise(outcomes, threshold=threshold),
        summarise(train, threshold=threshold) if "train" in splits else None,
        summarise(test, threshold=threshold) if "test" in splits else None,
    )


@dataclass(frozen=True)
class PanelRow:
    """One trigger iteration on the skill page."""

    iteration: TriggerIteration
    summaries: Summaries
    #: Word-level changes from the previous row's description ([] for the first, or none).
    changes: list[tuple[str, str]]

    @property
    def shown(self) -> TriggerSummary:
        """The figures the panel shows: the test split's where the loop held one out."""
        return self.summaries.test or self.summaries.all


@dataclass
class TriggerPanel:
    rows: list[PanelRow]
    latest_set: TriggerSet | None

    @property
    def figure_points(self) -> list[dict[str, Any]]:
        """recall and false-trigger rate per iteration, with intervals, for the chart."""
        points = []
        for row in self.rows:
            summary = row.shown
            points.append(
                {
                    "number": row.iteration.number,
                    "label": row.iteration.label,
                    "url": row.iteration.get_absolute_url(),
                    "split": "test" if row.summaries.test else "",
                    "recall": _point(summary.recall),
                    "false_trigger_rate": _point(summary.false_trigger_rate),
                }
            )
        return points

    @cached_property
    def figure(self) -> dict[str, Any]:
        """The chart of `figure_points`, a plotly figure as a dict."""
        return charts.trigger_trend_figure(self.figure_points)

    @cached_property
    def table(self) -> charts.ChartTable:
        """The chart's numbers, for readers without JavaScript."""
        return charts.trigger_trend_table(self.figure_points)

    @property
    def any_split(self) -> bool:
        """Whether some row's figures are its test split's, not all its queries'."""
        return any(row.summaries.test for row in self.rows)

    @property
    def set_counts(self) -> dict[str, int]:
        """The latest trigger set's queries: how many, and how many should and should not
        load the skill (all 0 without a set)."""
        queries = self.latest_set.queries if self.latest_set else []
        should = sum(1 for q in queries if q.get("should_trigger"))
        return {"total": len(queries), "should": should, "should_not": len(queries) - should}

    @property
    def skill_dir(self) -> str:
        """The skill folder the latest set was found in ("" when its path does not say)."""
        folders = PurePosixPath(self.latest_set.source_path if self.latest_set else "").parent
        parts = folders.parts
        if "evals" not in parts:
            return ""
        cut = len(parts) - 1 - parts[::-1].index("evals")
        return str(PurePosixPath(*parts[:cut])) if cut else ""


def _point(estimate: Any) -> dict[str, float] | None:
    if estimate is None:
        return None
    interval = estimate.interval
    return {
        "value": estimate.value,
        "low": interval.low if interval else estimate.value,
        "high": interval.high if interval else estimate.value,
    }


def trigger_panel(skill: Skill) -> TriggerPanel:
    """The skill's trigger iterations, oldest first, with their figures (two queries)."""
    iterations = list(skill.trigger_iterations.order_by("number"))
    queries: dict[int, list[QueryOutcome]] = {it.pk: [] for it in iterations}
    for query in TriggerQuery.objects.filter(iteration__skill=skill).order_by(
        "iteration_id", "position"
    ):
        queries[query.iteration_id].append(outcome_of(query))
    rows = []
    previous = None
    for iteration in iterations:
        iteration.skill = skill
        changes = description_changes(previous, iteration.description) if previous else []
        rows.append(
            PanelRow(iteration, _summaries(queries[iteration.pk], iteration.threshold), changes)
        )
        previous = iteration.description
    latest_set = skill.trigger_sets.order_by("-imported_at", "-pk").first()
    return TriggerPanel(rows, latest_set)


def description_changes(before: str, after: str) -> list[tuple[str, str]]:
    """(kind, words) runs from `before` to `after`: "same", "added" or "removed"; [] when
    they are equal."""
    if before == after:
        return []
    old, new = before.split(), after.split()
    runs: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new).get_opcodes():
        if tag == "equal":
            runs.append(("same", " ".join(old[i1:i2])))
            continue
        if i2 > i1:
            runs.append(("removed", " ".join(old[i1:i2])))
        if j2 > j1:
            runs.append(("added", " ".join(new[j1:j2])))
    return runs


@dataclass(frozen=True)
class QueryRow:
    query: TriggerQuery
    outcome: QueryOutcome
    passed: bool | None

    @property
    def runs(self) -> list[TriggerRun]:
        """The query's runs, where evalsite ran them (prefetched by trigger_iteration_page)."""
        return list(self.query.run_records.all())

    @property
    def miss_order(self) -> tuple[int, float, int]:
        """Failures first, then the furthest from right, then the file's order."""
        correct = self.outcome.correct_rate
        return (0 if self.passed is False else 1, correct if correct is not None else 2.0, 0)


@dataclass
class TriggerIterationPage:
    iteration: TriggerIteration
    summaries: Summaries
    rows: list[QueryRow]
    #: (expected, loaded) → runs, where which skill each run loaded was recorded.
    confusion: dict[tuple[str, str], int]
    skills_loaded: list[str]
    warnings: list[str]
    previous: TriggerIteration | None
    next: TriggerIteration | None
    runs_by_query: dict[int, list[Any]] = field(default_factory=dict)

    def confusion_rows(self) -> list[tuple[str, list[int]]]:
        """The matrix as rows: each expected skill with its run count per skill loaded."""
        expected = sorted({e for e, _ in self.confusion}, key=lambda s: (s == NONE, s))
        return [(e, [self.confusion.get((e, s), 0) for s in self.skills_loaded]) for e in expected]


def trigger_iteration_page(iteration: TriggerIteration) -> TriggerIterationPage:
    """A trigger iteration's queries, misses and false triggers first, and its matrix."""
    queries = list(iteration.queries.prefetch_related("run_records"))
    rows = []
    for query in queries:
        outcome = outcome_of(query)
        rows.append(QueryRow(query, outcome, outcome.passed(iteration.threshold)))
    rows.sort(key=lambda row: row.miss_order)
    cells = confusion(_routed(row.outcome, iteration.skill.name) for row in rows)
    loaded = sorted({s for _, s in cells}, key=lambda s: (s == NONE, s))
    siblings = TriggerIteration.objects.filter(skill_id=iteration.skill_id)
    return TriggerIterationPage(
        iteration=iteration,
        summaries=_summaries([row.outcome for row in rows], iteration.threshold),
        rows=rows,
        confusion=cells,
        skills_loaded=loaded,
        warnings=messages(iteration.validity_warnings),
        previous=siblings.filter(number__lt=iteration.number).order_by("-number").first(),
        next=siblings.filter(number__gt=iteration.number).order_by("number").first(),
        runs_by_query={q.pk: list(q.run_records.all()) for q in queries},
    )


def _routed(outcome: QueryOutcome, skill: str) -> QueryOutcome:
    """The outcome with the skill it expects named: a query's blank expected skill means the
    skill under test when it should trigger, and no skill when it should not."""
    if outcome.expected:
        return outcome
    return replace(outcome, expected=skill if outcome.should_trigger else NONE)


@dataclass(frozen=True)
class TriggerComparison:
    before: TriggerIteration
    after: TriggerIteration
    delta: PairedDelta | None
    verdict: str
    flips: list[Flip]
    changes: list[tuple[str, str]]
    before_summary: TriggerSummary
    after_summary: TriggerSummary

    @property
    def fixed(self) -> list[Flip]:
        """The shared queries that failed before and pass after."""
        return [flip for flip in self.flips if flip.fixed]

    @property
    def broken(self) -> list[Flip]:
        """The shared queries that passed before and fail after."""
        return [flip for flip in self.flips if not flip.fixed]


def compare_trigger_iterations(
    before: TriggerIteration, after: TriggerIteration
) -> TriggerComparison:
    """after − before in each shared query's share of correct runs, with the flips."""
    old = [outcome_of(q) for q in before.queries.all()]
    new = [outcome_of(q) for q in after.queries.all()]
    delta = compare_descriptions(old, new)
    verdict = delta_verdict(
        delta, treatment=f"#{after.number}", control=f"#{before.number}", unit=("query", "queries")
    )
    return TriggerComparison(
        before=before,
        after=after,
        delta=delta,
        verdict=verdict,
        flips=flipped_queries(old, new, threshold=after.threshold),
        changes=description_changes(before.description, after.description),
        before_summary=summarise(old, threshold=before.threshold),
        after_summary=summarise(new, threshold=after.threshold),
    )
