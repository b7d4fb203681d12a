"""Iteration summaries: the headline figures every page and the API show of an iteration.

`summarise_iterations` asks the database one page-sized question for any number of
iterations (the grouped rows of `reading.rows`) and hands plain numbers to `runs.stats`,
so every figure a person reads comes from the same code, with its interval and verdict.
The overview, skill, iteration and compare pages, the API and runevals all read these.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from .. import pricing, stats
from ..models import Iteration, Role
from .rows import CaseRow, CellRow, ConditionRow, cases_of, cell_aggregates, conditions_of, fetch


@dataclass
class Cell:
    """One eval × condition of an iteration: its runs, graded and errored, pass rates, and
    (on the iteration page) the assertions that are flaky in it."""

    condition: str
    runs: int = 0
    graded: int = 0
    errored: int = 0
    pass_sum: float = 0.0
    flaky: list[str] = field(default_factory=list)

    @property
    def score(self) -> float | None:
        """The mean pass rate of its graded runs."""
        return self.pass_sum / self.graded if self.graded else None

    @property
    def missing(self) -> int:
        """Runs neither graded nor errored: no grading.json."""
        return self.runs - self.graded - self.errored


@dataclass(frozen=True)
class ConditionSummary:
    """One condition of an iteration: its clustered score, invocation and cost."""

    name: str
    role: str
    loads_skill: bool
    score: stats.ConditionScore | None
    runs: int
    graded: int
    errored: int
    #: Skill-loading conditions, evals that should trigger: meta check, else transcript.
    invocation: stats.Proportion | None
    #: Skill-loading conditions, negative evals: a Skill call in the transcript.
    false_trigger: stats.Proportion | None
    mean_tokens: float | None
    mean_duration_ms: float | None
    #: What its runs cost at the iteration's agent model's price (runs.pricing).
    cost: pricing.Cost = pricing.Cost()

    @property
    def sentence(self) -> str:
        return stats.score_sentence(self.score, condition=self.name)


@dataclass(frozen=True)
class IterationSummary:
    """An iteration's headline: conditions, treatment − control delta and its verdict."""

    iteration: Iteration
    conditions: list[ConditionSummary]
    treatment: ConditionSummary | None
    control: ConditionSummary | None
    delta: stats.PairedDelta | None
    verdict: str
    evals: list[str] = field(default_factory=list)
    zero_assertion_evals: list[str] = field(default_factory=list)
    #: The cell rows behind `cells` and the names of their conditions by id: folded only
    #: when a page shows the matrix (the skill page's trend never does).
    cell_rows: list[CellRow] = field(default_factory=list)
    condition_names: dict[int, str] = field(default_factory=dict)

    @functools.cached_property
    def cells(self) -> dict[tuple[str, str], Cell]:
        """(eval id, condition) → its runs, as the iteration page's matrix shows them."""
        cells: dict[tuple[str, str], Cell] = {}
        for row in self.cell_rows:
            name = self.condition_names[row.condition_id]
            # An eval whose runs name two definitions has a row for each: one cell.
            cell = cells.setdefault((row.eval_id, name), Cell(name))
            cell.runs += row.runs
            cell.graded += row.graded
            cell.errored += row.errored
            cell.pass_sum += float(row.pass_sum or 0)
        return cells

    @property
    def token_delta(self) -> float | None:
        if not self.treatment or not self.control:
            return None
        if self.treatment.mean_tokens is None or self.control.mean_tokens is None:
            return None
        return self.treatment.mean_tokens - self.control.mean_tokens

    @property
    def gain_per_1k_tokens(self) -> float | None:
        """Pass-rate gain per extra 1k tokens the treatment spends.

        None unless the treatment spends meaningfully more (MEANINGFUL_TOKENS): divided by a
        difference of a few tokens, noise in the token counts made ratios in the thousands.
        """
        if self.delta is None or self.token_delta is None or self.control is None:
            return None
        if not meaningful_token_difference(self.token_delta, self.control.mean_tokens):
            return None
        return stats.pass_rate_gain_per_1k_tokens(self.delta.mean, self.token_delta)

    @property
    def cost(self) -> pricing.Cost:
        """What all its runs cost, when every condition's total is known."""
        return pricing.sum_costs([c.cost for c in self.conditions])

    @property
    def extra_cost_per_run(self) -> float | None:
        """What a treatment run costs more than a control run, in dollars."""
        if not self.treatment or not self.control:
            return None
        t, c = self.treatment.cost.mean_usd, self.control.cost.mean_usd
        return t - c if t is not None and c is not None else None

    @property
    def cost_per_point(self) -> float | None:
        """Extra dollars a run per pass-rate point the treatment gains (runs.pricing)."""
        if self.delta is None:
            return None
        return pricing.cost_per_point(
            self.extra_cost_per_run, self.delta.mean * 100, significant=self.delta.significant
        )

    @property
    def power_note(self) -> str:
        """Why the delta cannot be significant with this few evals, and how many it needs."""
        return stats.power_note(self.delta)


#: A token difference worth a price: at least this many tokens a run, and this share of the
#: control's mean.
MEANINGFUL_TOKENS = 500
MEANINGFUL_TOKEN_SHARE = 0.05


def meaningful_token_difference(token_delta: float, control_tokens: float | None) -> bool:
    """Whether the treatment spends enough more tokens for "gain per 1k tokens" to mean much."""
    if token_delta < MEANINGFUL_TOKENS:
        return False
    return not control_tokens or token_delta >= MEANINGFUL_TOKEN_SHARE * control_tokens


@dataclass
class _ConditionTotals:
    """One condition of one iteration: totals over its evals' cell rows."""

    name: str
    role: str
    loads_skill: bool
    position: int
    per_eval: dict[str, float]
    runs: int
    graded: int
    errored: int
    invoked: int  # evals that should trigger: meta verdict, else transcript
    checked: int
    positive_evals: int
    false_triggers: int  # negative evals: Skill calls in the transcript
    negative_checked: int
    negative_evals: int
    tokens: float
    tokens_n: int
    duration: float
    duration_n: int
    token_kinds: pricing.Tokens
    priced_n: int

    @classmethod
    def from_rows(
        cls, condition: ConditionRow, rows: list[CellRow], triggers: dict[int, bool]
    ) -> _ConditionTotals:
        """Fold the condition's cell rows, a column at a time.

        Column-wise sums run in C; a Python loop over every row cost as much as the query.
        """
        # A CellRow of columns: each field holds that column's values, in fetch order.
        col = CellRow._make(zip(*rows, strict=True))
        should = [triggers[case_id] for case_id in col.eval_case_id]
        positive = [i for i, trigger in enumerate(should) if trigger]
        negative = [i for i, trigger in enumerate(should) if not trigger]
        return cls(
            name=condition.name,
            role=condition.role,
            loads_skill=bool(condition.loads_skill),
            position=condition.position,
            # Rows in fetch order: a later row of the same eval wins, as it always has.
            per_eval={
                e: float(p) / g
                for e, g, p in zip(col.eval_id, col.graded, col.pass_sum, strict=True)
                if g
            },
            runs=sum(col.runs),
            graded=sum(col.graded),
            errored=sum(col.errored),
            invoked=sum(col.invoked[i] if col.invocation_n[i] else col.called[i] for i in positive),
            checked=sum(col.invocation_n[i] or col.called_n[i] for i in positive),
            positive_evals=len(positive),
            false_triggers=sum(col.called[i] for i in negative),
            negative_checked=sum(col.called_n[i] for i in negative),
            negative_evals=len(negative),
            # Whole numbers summed exactly (PostgreSQL's sums of bigints are Decimals).
            tokens=float(sum(filter(None, col.tokens_sum))),
            tokens_n=sum(col.tokens_n),
            duration=float(sum(filter(None, col.duration_sum))),
            duration_n=sum(col.duration_n),
            token_kinds=pricing.Tokens(
                *(
                    int(sum(filter(None, values)))
                    for values in (col.input_sum, col.output_sum)
                    + (col.cache_write_sum, col.cache_read_sum)
                )
            ),
            priced_n=sum(col.priced_n),
        )


def summarise_iterations(iterations: Sequence[Iteration]) -> dict[int, IterationSummary]:
    """iteration id → summary, for any number of iterations in three queries.

    One GROUP BY gives the cells; the conditions' and evals' own attributes (name, role,
    position; trigger expectation, weight) come once each rather than in every cell row.
    """
    by_id = {it.pk: it for it in iterations}
    if not by_id:
        return {}
    fetched = fetch(CellRow, cell_aggregates, by_id)
    conditions = {c.pk: c for c in fetch(ConditionRow, conditions_of, by_id)}
    triggers: dict[int, bool] = {}
    case_weights: dict[int, float] = {}
    for case in fetch(CaseRow, cases_of, {row.eval_case_id for row in fetched}):
        triggers[case.pk] = bool(case.skill_should_trigger)
        case_weights[case.pk] = float(case.weight)
    weights: dict[int, dict[str, float]] = defaultdict(dict)
    zero: dict[int, set[str]] = defaultdict(set)
    groups: dict[tuple[int, int], list[CellRow]] = defaultdict(list)
    rows_of: dict[int, list[CellRow]] = defaultdict(list)
    for row in fetched:
        weights[row.iteration_id][row.eval_id] = case_weights[row.eval_case_id]
        if row.zero_assertions:
            zero[row.iteration_id].add(row.eval_id)
        groups[row.iteration_id, row.condition_id].append(row)
        rows_of[row.iteration_id].append(row)
    names = {pk: condition.name for pk, condition in conditions.items()}
    totals: dict[int, list[_ConditionTotals]] = defaultdict(list)
    for (iteration_id, condition_id), rows in groups.items():
        condition = conditions[condition_id]
        totals[iteration_id].append(_ConditionTotals.from_rows(condition, rows, triggers))
    return {
        pk: _summary(
            iteration,
            sorted(totals[pk], key=lambda c: (c.position, c.name)),
            weights[pk],
            zero[pk],
            rows_of[pk],
            names,
        )
        for pk, iteration in by_id.items()
    }


def _summary(
    iteration: Iteration,
    totals: list[_ConditionTotals],
    weights: dict[str, float],
    zero: set[str],
    cell_rows: list[CellRow],
    condition_names: dict[int, str],
) -> IterationSummary:
    model = iteration.agent_model
    conditions = [_condition(condition, weights, model) for condition in totals]
    treatment, control = _pick(conditions, Role.TREATMENT), _pick(conditions, Role.CONTROL)
    delta = None
    if treatment and control and treatment.score and control.score:
        delta = stats.paired_delta(
            treatment.score.per_eval,
            control.score.per_eval,
            treatment=treatment.name,
            control=control.name,
            weights=weights,
        )
    if treatment and control:
        verdict = stats.delta_verdict(delta, treatment=treatment.name, control=control.name)
    elif conditions:
        verdict = f"only {conditions[0].name} ran: nothing to compare it with"
    else:
        verdict = "no runs"
    return IterationSummary(
        iteration=iteration,
        conditions=conditions,
        treatment=treatment,
        control=control,
        delta=delta,
        verdict=verdict,
        evals=sorted(weights),
        zero_assertion_evals=sorted(zero),
        cell_rows=cell_rows,
        condition_names=condition_names,
    )


def _pick(conditions: list[ConditionSummary], role: str) -> ConditionSummary | None:
    # Conditions arrive in the source's order: the first of a role is the one compared.
    return next((c for c in conditions if c.role == role), None)


def _condition(totals: _ConditionTotals, weights: dict[str, float], model: str) -> ConditionSummary:
    invocation = false_trigger = None
    if totals.loads_skill:
        if totals.positive_evals and totals.checked:
            invocation = _proportion(totals.invoked, totals.checked)
        if totals.negative_evals:
            false_trigger = _proportion(totals.false_triggers, totals.negative_checked)
    return ConditionSummary(
        name=totals.name,
        role=totals.role,
        loads_skill=totals.loads_skill,
        score=stats.score_from_eval_scores(
            totals.name, totals.per_eval, n_runs=totals.graded, weights=weights
        ),
        runs=totals.runs,
        graded=totals.graded,
        errored=totals.errored,
        invocation=invocation,
        false_trigger=false_trigger,
        mean_tokens=_mean(totals.tokens, totals.tokens_n),
        mean_duration_ms=_mean(totals.duration, totals.duration_n),
        cost=pricing.group_cost(
            model,
            totals.token_kinds,
            priced_runs=totals.priced_n,
            runs_with_tokens=totals.tokens_n,
        ),
    )


def _mean(total: float | None, n: int) -> float | None:
    return total / n if n and total is not None else None


def _proportion(successes: int, n: int) -> stats.Proportion:
    return stats.Proportion(successes, n, stats.wilson_interval(successes, n))
