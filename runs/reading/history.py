"""An eval's history: one eval of a skill across every iteration, in display order.

Per iteration: each condition's score (the mean pass rate of its runs, with a t interval
over the runs), the treatment − control delta (a Welch interval, as the compare page's
per-eval changes), per-assertion pass counts with the flips since the iteration before
(`stats.flipped_assertions`), and where the eval's definition changed, what changed.
Iterations that did not run the eval are rows too, marked absent.

Six queries whatever the number of iterations: the iterations, the eval's runs, their
conditions, their definitions and their assertion results, all for the one eval. The eval
page's summary (`eval_summary`) is the same figures for one iteration, from the runs the
eval page has loaded already.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import F

from .. import stats
from ..models import AssertionResult, Condition, EvalCase, Iteration, Role, Run, RunStatus, Skill
from ..stats.scores import DELTA_BOUNDS, PASS_RATE_BOUNDS
from .samples import outcome_rows
from .triggers import description_changes

#: Prompts longer than this are not word-diffed on the page (the diff would be the prompt).
MAX_PROMPT_DIFF_WORDS = 2_000


@dataclass(frozen=True)
class ConditionScore:
    """One condition's runs of the eval in one iteration: counts and the mean pass rate."""

    name: str
    role: str
    runs: int
    graded: int
    errored: int
    #: Runs that passed every assertion.
    passing: int
    #: The mean pass rate of the graded runs with a 95% interval over them (none for one run).
    score: stats.Estimate | None
    #: The lowest run index, for links to a run of this condition.
    first_run: int

    @property
    def missing(self) -> int:
        """Runs neither graded nor errored: no grading.json."""
        return self.runs - self.graded - self.errored

    @property
    def choice(self) -> str:
        """Its first run as the diff page names a run: "<condition>/<run>"."""
        return f"{self.name}/{self.first_run}"


@dataclass(frozen=True)
class AssertionCell:
    """One assertion in one role of one iteration: passes out of runs, and its flip."""

    condition: str
    passed: int
    runs: int
    #: "fixed" or "broke" since the previous iteration that ran the eval, else "".
    flip: str = ""
    #: The previous iteration's tally, where it flipped.
    before: stats.AssertionTally | None = None

    @property
    def status(self) -> str:
        """ "pass" (every run), "fail" (none) or "flaky", as flips are judged."""
        return "pass" if self.passed == self.runs else "fail" if self.passed == 0 else "flaky"


@dataclass(frozen=True)
class DefinitionChange:
    """How the eval's definition differs from the version the previous iteration ran."""

    #: What changed, as a person names it: "prompt", "assertions", "expected output", …
    parts: list[str]
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: Assertions kept under the same id whose definition changed.
    rewritten: list[str] = field(default_factory=list)
    #: The prompt's word-level changes (`_word_diff.html`); [] when the prompt is the same
    #: or too long to diff usefully.
    prompt_words: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class HistoryRow:
    """One iteration of the skill, as the eval's history shows it."""

    iteration: Iteration
    eval_id: str
    #: 1 for the first iteration in display order.
    position: int
    present: bool
    conditions: list[ConditionScore] = field(default_factory=list)
    treatment: ConditionScore | None = None
    control: ConditionScore | None = None
    #: treatment − control of the mean run pass rates, Welch interval over the runs.
    delta: stats.Estimate | None = None
    #: role ("treatment" / "control") → assertion id → its cell.
    assertions: dict[str, dict[str, AssertionCell]] = field(default_factory=dict)
    #: The definition version its runs pointed at (the latest where they name several).
    definition: EvalCase | None = None
    change: DefinitionChange | None = None
    #: The iteration before this one that ran the eval: flips and diffs are against it.
    previous: Iteration | None = None
    previous_treatment: ConditionScore | None = None
    #: One entry per assertion of the history (`EvalHistory.assertion_ids`): each shown
    #: role with its cell, None where the assertion was not graded in that role.
    cells: list[list[tuple[str, AssertionCell | None]]] = field(default_factory=list)

    @property
    def flips(self) -> list[tuple[str, str, AssertionCell]]:
        """(role, assertion id, cell) of every assertion that flipped here."""
        return [
            (role, assertion_id, cell)
            for role, cells in self.assertions.items()
            for assertion_id, cell in cells.items()
            if cell.flip
        ]


@dataclass
class EvalHistory:
    """Everything the eval's history page shows."""

    skill: Skill
    eval_id: str
    name: str
    #: Newest first, as the skill page's iteration table lists them.
    rows: list[HistoryRow]
    #: Every assertion id any iteration graded, in the order the definitions list them.
    assertion_ids: list[str]

    @functools.cached_property
    def present(self) -> list[HistoryRow]:
        """The iterations that ran the eval, newest first."""
        return [row for row in self.rows if row.present]

    @functools.cached_property
    def roles(self) -> list[str]:
        """The roles whose assertion counts the page shows: treatment, control where run."""
        seen = {role for row in self.rows for role in row.assertions}
        return [role for role in (Role.TREATMENT, Role.CONTROL) if role in seen]

    @property
    def both_roles(self) -> bool:
        """Whether the assertion counts name their role (T, C): both roles ran."""
        return len(self.roles) > 1


@dataclass(frozen=True)
class EvalSummary:
    """One iteration's runs of one eval: per condition and per assertion (the eval page)."""

    conditions: list[ConditionScore]
    #: Assertion ids in order, each with its cell per condition of `conditions` (None
    #: where that condition's runs were not graded on it).
    assertions: list[tuple[str, list[AssertionCell | None]]]
    delta: stats.Estimate | None
    treatment: str | None
    control: str | None


def eval_history(skill: Skill, eval_id: str) -> EvalHistory | None:
    """The eval across every iteration of the skill; None when no iteration ran it."""
    iterations = Iteration.objects.trend_of(skill)
    ids = [it.pk for it in iterations]
    runs = list(
        Run.objects.filter(iteration_id__in=ids, eval_id=eval_id)
        .order_by("iteration_id", "run_index")
        .values(
            "iteration_id",
            "condition_id",
            "eval_case_id",
            "run_index",
            "status",
            pass_rate=F("grading__pass_rate"),
        )
    )
    if not runs:
        return None
    conditions = {
        c["pk"]: c
        for c in Condition.objects.filter(iteration_id__in={r["iteration_id"] for r in runs})
        .order_by()
        .values("pk", "iteration_id", "name", "role", "position")
    }
    cases = {
        case.pk: case
        for case in EvalCase.objects.filter(pk__in={r["eval_case_id"] for r in runs}).only(
            "eval_id",
            "fingerprint",
            "origin",
            "name",
            "prompt",
            "expected_output",
            "assertions",
            "skill_should_trigger",
            "tags",
            "weight",
            "created_at",
        )
    }
    outcomes = _outcomes(ids, eval_id)

    runs_of: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        run["condition"] = conditions[run["condition_id"]]["name"]
        runs_of[run["iteration_id"]].append(run)
    outcomes_of: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for outcome in outcomes:
        outcomes_of[outcome.pop("iteration_id")].append(outcome)
    conditions_of: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for condition in sorted(conditions.values(), key=lambda c: (c["position"], c["name"])):
        conditions_of[condition["iteration_id"]].append(condition)

    rows: list[HistoryRow] = []
    before: tuple[HistoryRow, stats.IterationRuns] | None = None
    for position, iteration in enumerate(iterations, start=1):
        if iteration.pk not in runs_of:
            rows.append(HistoryRow(iteration, eval_id, position, present=False))
            continue
        its_runs = runs_of[iteration.pk]
        scores = _condition_scores(its_runs, conditions_of[iteration.pk])
        treatment = _first(scores, Role.TREATMENT)
        control = _first(scores, Role.CONTROL)
        side = stats.IterationRuns(
            label=f"#{iteration.number}",
            treatment=treatment.name if treatment else "",
            control=control.name if control else None,
            runs=(),
            outcomes=outcomes_of[iteration.pk],
        )
        definition = max(
            (cases[pk] for pk in {r["eval_case_id"] for r in its_runs}),
            key=lambda case: case.created_at,
        )
        row = HistoryRow(
            iteration,
            eval_id,
            position,
            present=True,
            conditions=scores,
            treatment=treatment,
            control=control,
            delta=_delta(its_runs, treatment, control),
            assertions=_role_cells(side),
            definition=definition,
        )
        if before is not None:
            previous, previous_side = before
            row.previous = previous.iteration
            row.previous_treatment = previous.treatment
            _mark_flips(row, stats.flipped_assertions(previous_side, side))
            if previous.definition and previous.definition.fingerprint != definition.fingerprint:
                row.change = definition_change(previous.definition, definition)
        rows.append(row)
        before = (row, side)

    latest = next(row.definition for row in reversed(rows) if row.definition)
    history = EvalHistory(
        skill=skill,
        eval_id=eval_id,
        name=latest.name or eval_id,
        rows=rows[::-1],
        assertion_ids=_assertion_order(rows, outcomes),
    )
    roles = history.roles
    for row in history.present:
        row.cells = [
            [(role, row.assertions.get(role, {}).get(assertion_id)) for role in roles]
            for assertion_id in history.assertion_ids
        ]
    return history


def eval_name(skill: Skill, eval_id: str) -> str:
    """What a person reads for the skill's eval: its latest definition's name, else the id."""
    name = (
        EvalCase.objects.filter(skill=skill, eval_id=eval_id)
        .exclude(name="")
        .order_by("-created_at")
        .values_list("name", flat=True)
        .first()
    )
    return name or eval_id


def eval_summary(runs: Sequence[Run]) -> EvalSummary:
    """Per condition and per assertion, the runs of one eval in one iteration.

    `runs` as the eval page loads them (`Run.objects.for_eval_page`: conditions, gradings
    and results prefetched), so the summary asks the database nothing more.
    """
    rows, outcomes, conditions = [], [], {}
    for run in runs:
        grading = getattr(run, "grading", None)
        rows.append(
            {
                "condition": run.condition.name,
                "run_index": run.run_index,
                "status": run.status,
                "pass_rate": grading.pass_rate if grading else None,
            }
        )
        conditions.setdefault(
            run.condition.name,
            {"name": run.condition.name, "role": run.condition.role},
        )
        if grading and run.status != RunStatus.ERRORED:
            outcomes += [
                {
                    "eval_id": run.eval_id,
                    "condition": run.condition.name,
                    "run_index": run.run_index,
                    "assertion_id": result.assertion_id,
                    "passed": result.effective_passed,
                }
                for result in grading.results.all()
                if not result.is_meta
            ]
    scores = _condition_scores(rows, list(conditions.values()))
    treatment, control = _first(scores, Role.TREATMENT), _first(scores, Role.CONTROL)
    cells: dict[str, dict[str, AssertionCell]] = defaultdict(dict)
    for tally in stats.assertion_tallies(outcomes):
        cells[tally.assertion_id][tally.condition] = AssertionCell(
            tally.condition, tally.passed, tally.runs
        )
    order = list(dict.fromkeys(o["assertion_id"] for o in outcomes))
    return EvalSummary(
        conditions=scores,
        assertions=[
            (assertion_id, [cells[assertion_id].get(c.name) for c in scores])
            for assertion_id in order
        ],
        delta=_delta(rows, treatment, control),
        treatment=treatment.name if treatment else None,
        control=control.name if control else None,
    )


def definition_change(before: EvalCase, after: EvalCase) -> DefinitionChange:
    """What differs between two versions of an eval's definition, part by part."""
    parts = []
    if before.prompt.strip() != after.prompt.strip():
        parts.append("prompt")
    old = {a.get("id"): a for a in before.assertions}
    new = {a.get("id"): a for a in after.assertions}
    added = sorted(str(k) for k in new.keys() - old.keys())
    removed = sorted(str(k) for k in old.keys() - new.keys())
    rewritten = sorted(str(k) for k in old.keys() & new.keys() if old[k] != new[k])
    if added or removed or rewritten:
        parts.append("assertions")
    for label, attribute in (
        ("expected output", "expected_output"),
        ("name", "name"),
        ("trigger expectation", "skill_should_trigger"),
        ("tags", "tags"),
        ("weight", "weight"),
    ):
        if getattr(before, attribute) != getattr(after, attribute):
            parts.append(label)
    if not parts:
        # The fingerprint covers the whole definition: files, setup, a dialect's own fields.
        parts.append("other fields of the definition")
    words = []
    if "prompt" in parts and len(before.prompt.split()) + len(after.prompt.split()) <= (
        MAX_PROMPT_DIFF_WORDS
    ):
        words = description_changes(before.prompt, after.prompt)
    return DefinitionChange(parts, added, removed, rewritten, words)


# --- the pieces -----------------------------------------------------------------------------


def _outcomes(iteration_ids: list[int], eval_id: str) -> list[dict[str, Any]]:
    """The eval's substantive assertion results as `AssertionOutcome` rows, by iteration.

    As `samples.assertion_outcomes`, for one eval: overrides count, errored runs do not.
    """
    return outcome_rows(
        AssertionResult.objects.filter(
            grading__run__iteration_id__in=iteration_ids,
            grading__run__eval_id=eval_id,
            is_meta=False,
        )
        .exclude(grading__run__status=RunStatus.ERRORED)
        .order_by("grading__run__iteration_id", "position", "pk")
    )


def _condition_scores(
    runs: Iterable[Mapping[str, Any]], conditions: Sequence[Mapping[str, Any]]
) -> list[ConditionScore]:
    """Each condition that ran: its run counts and its mean pass rate with an interval."""
    by_condition: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for run in runs:
        by_condition[run["condition"]].append(run)
    scores = []
    for condition in conditions:
        its = by_condition.get(condition["name"])
        if not its:
            continue
        counted = [r for r in its if r["status"] != RunStatus.ERRORED]
        rates = [r["pass_rate"] for r in counted if r["pass_rate"] is not None]
        scores.append(
            ConditionScore(
                name=condition["name"],
                role=condition["role"],
                runs=len(its),
                graded=len(rates),
                errored=len(its) - len(counted),
                passing=sum(1 for rate in rates if rate >= 1),
                score=stats.mean_interval(rates, bounds=PASS_RATE_BOUNDS),
                first_run=min(r["run_index"] for r in its),
            )
        )
    return scores


def _first(scores: Sequence[ConditionScore], role: str) -> ConditionScore | None:
    # Conditions come in the source's order: the first of a role is the one compared, as
    # in the iteration's summary.
    return next((s for s in scores if s.role == role), None)


def _delta(
    runs: Iterable[Mapping[str, Any]],
    treatment: ConditionScore | None,
    control: ConditionScore | None,
) -> stats.Estimate | None:
    """treatment − control over the eval's runs: the compare page's Welch interval."""
    if not (treatment and control and treatment.score and control.score):
        return None
    rates: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        if run["status"] != RunStatus.ERRORED and run["pass_rate"] is not None:
            rates[run["condition"]].append(run["pass_rate"])
    return stats.welch_interval([rates[treatment.name]], [rates[control.name]], bounds=DELTA_BOUNDS)


def _role_cells(side: stats.IterationRuns) -> dict[str, dict[str, AssertionCell]]:
    """role → assertion id → its tally, for the side's treatment and control."""
    roles = {side.treatment: Role.TREATMENT, side.control: Role.CONTROL}
    cells: dict[str, dict[str, AssertionCell]] = defaultdict(dict)
    for tally in stats.assertion_tallies(side.outcomes):
        if tally.condition and tally.condition in roles:
            role = str(roles[tally.condition])
            cells[role][tally.assertion_id] = AssertionCell(
                tally.condition, tally.passed, tally.runs
            )
    return dict(cells)


def _mark_flips(row: HistoryRow, flips: Iterable[stats.AssertionFlip]) -> None:
    for flip in flips:
        cells = row.assertions[str(flip.role)]
        cell = cells[flip.assertion_id]
        cells[flip.assertion_id] = AssertionCell(
            cell.condition, cell.passed, cell.runs, flip=flip.direction, before=flip.before
        )


def _assertion_order(
    rows: Sequence[HistoryRow], outcomes: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Assertion ids as the definitions list them (latest first), then any only graded."""
    ids: dict[str, None] = {}
    for row in reversed(rows):
        if row.definition:
            for assertion in row.definition.assertions:
                if assertion.get("id") is not None:
                    ids.setdefault(str(assertion["id"]), None)
    graded = dict.fromkeys(o["assertion_id"] for o in outcomes)
    return [i for i in ids if i in graded] + [i for i in graded if i not in ids]
