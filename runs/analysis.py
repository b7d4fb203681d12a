"""What pages and the API show about iterations: the statistics module fed from SQL.

Each function here asks the database one page-sized question (one GROUP BY for any number
of iterations, one row query for a single iteration) and hands plain rows to `runs.stats`,
so every figure a person reads comes from the same code, with its interval and verdict.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from . import stats
from .models import Condition, EvalCase, Iteration, Role, Run


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
    #: The cell aggregate rows behind `cells` and the names of their conditions by id:
    #: folded only when a page shows the matrix (the skill page's trend never does).
    cell_rows: list[tuple[Any, ...]] = field(default_factory=list)
    condition_names: dict[int, str] = field(default_factory=dict)

    @functools.cached_property
    def cells(self) -> dict[tuple[str, str], EvalCell]:
        """(eval id, condition) → its runs, as the iteration page's matrix shows them."""
        cells: dict[tuple[str, str], EvalCell] = {}
        for row in self.cell_rows:
            _, condition_id, eval_id, _, runs, graded, pass_sum, errored = row[:8]
            # An eval whose runs name two definitions has a row for each: one cell.
            cell = cells.setdefault((eval_id, self.condition_names[condition_id]), EvalCell())
            cell.runs += runs
            cell.graded += graded
            cell.errored += errored
            cell.pass_sum += float(pass_sum or 0)
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
class EvalCell:
    """One eval × condition of an iteration: its runs, graded and errored, and pass rates."""

    runs: int = 0
    graded: int = 0
    errored: int = 0
    pass_sum: float = 0.0

    @property
    def score(self) -> float | None:
        """The mean pass rate of its graded runs."""
        return self.pass_sum / self.graded if self.graded else None

    @property
    def missing(self) -> int:
        """Runs neither graded nor errored: no grading.json."""
        return self.runs - self.graded - self.errored


def _mean(total: float | None, n: int) -> float | None:
    return total / n if n and total is not None else None


def _pick(conditions: list[ConditionSummary], role: str) -> ConditionSummary | None:
    # Conditions arrive in the source's order: the first of a role is the one compared.
    return next((c for c in conditions if c.role == role), None)


@dataclass
class _Cell:
    """One condition of one iteration: totals over its evals' aggregate rows."""

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

    @classmethod
    def from_rows(
        cls,
        condition: tuple[str, str, bool, int],
        rows: list[tuple[Any, ...]],
        triggers: dict[int, bool],
    ) -> _Cell:
        """Fold the condition's cell_aggregates rows (CELL_FIELDS), a column at a time.

        Column-wise sums run in C; a Python loop over every row cost as much as the query.
        """
        (
            _, _, eval_ids, case_ids, runs, graded, pass_sums, errored, _, invoked,
            invocation_n, called, called_n, tokens, tokens_n, duration, duration_n,
        ) = zip(*rows, strict=True)  # fmt: skip
        should = [triggers[case_id] for case_id in case_ids]
        positive = [i for i, trigger in enumerate(should) if trigger]
        negative = [i for i, trigger in enumerate(should) if not trigger]
        return cls(
            *condition,
            # Rows in fetch order: a later row of the same eval wins, as it always has.
            per_eval={
                e: float(p) / g for e, g, p in zip(eval_ids, graded, pass_sums, strict=True) if g
            },
            runs=sum(runs),
            graded=sum(graded),
            errored=sum(errored),
            invoked=sum(invoked[i] if invocation_n[i] else called[i] for i in positive),
            checked=sum(invocation_n[i] or called_n[i] for i in positive),
            positive_evals=len(positive),
            false_triggers=sum(called[i] for i in negative),
            negative_checked=sum(called_n[i] for i in negative),
            negative_evals=len(negative),
            # Whole numbers summed exactly (PostgreSQL's sums of bigints are Decimals).
            tokens=float(sum(filter(None, tokens))),
            tokens_n=sum(tokens_n),
            duration=float(sum(filter(None, duration))),
            duration_n=sum(duration_n),
        )


def _cells_of(ids: list[int]) -> QuerySet:
    return Run.objects.filter(iteration_id__in=ids).cell_aggregates()


def _conditions_of(ids: list[int]) -> QuerySet:
    # No ORDER BY: the caller looks rows up by id.
    return (
        Condition.objects.filter(iteration_id__in=ids)
        .order_by()
        .values_list("pk", "name", "role", "loads_skill", "position")
    )


def _cases(ids: list[int]) -> QuerySet:
    return (
        EvalCase.objects.filter(pk__in=ids)
        .order_by()
        .values_list("pk", "skill_should_trigger", "weight")
    )


@functools.lru_cache(maxsize=256)
def _compiled(
    build: Callable[[list[int]], QuerySet], vendor: str, count: int
) -> tuple[str, tuple[Any, ...]] | None:
    """The SQL of build(ids) for `count` ids and its params before the ids, or None.

    Building and compiling the cell aggregates' queryset costs a third of running it on
    SQLite, and the SQL depends only on how many ids there are. The page cache does not
    make this unneeded: every page's first view after an import or a review computes its
    summaries, and bench/stats_bench.py (which measures them uncached) is 3.6x its floor
    on SQLite without it, against a target of 3x. Stand-in ids (no primary
    key is negative) show where the ids go; when they are not the trailing params, the
    caller compiles each time instead.
    """
    stand_ins = list(range(-count, 0))
    sql, params = build(stand_ins).query.sql_with_params()
    lead = len(params) - count
    if list(params[lead:]) != stand_ins:
        return None
    return sql, tuple(params[:lead])


def _fetch(build: Callable[[list[int]], QuerySet], ids: Iterable[int]) -> list[tuple[Any, ...]]:
    """The rows of build(ids) as plain tuples, without Django's per-value converters.

    Per-value converters cost more than the cell aggregates' query itself on 1,000+ rows,
    and these are plain counts, sums, names and flags.
    """
    ids = list(ids)
    if not ids:
        return []
    compiled = _compiled(build, connection.vendor, len(ids))
    if compiled is None:
        sql, params = build(ids).query.sql_with_params()
    else:
        sql, params = compiled[0], (*compiled[1], *ids)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def summarise_iterations(iterations: Sequence[Iteration]) -> dict[int, IterationSummary]:
    """iteration id → summary, for any number of iterations in three queries.

    One GROUP BY gives the cells; the conditions' and evals' own attributes (name, role,
    position; trigger expectation, weight) come once each rather than in every cell row.
    """
    by_id = {it.pk: it for it in iterations}
    if not by_id:
        return {}
    fetched = _fetch(_cells_of, by_id)
    conditions = {
        pk: (name, role, bool(loads), position)
        for pk, name, role, loads, position in _fetch(_conditions_of, by_id)
    }
    triggers: dict[int, bool] = {}
    case_weights: dict[int, float] = {}
    for pk, trigger, weight in _fetch(_cases, {row[3] for row in fetched}):
        triggers[pk], case_weights[pk] = bool(trigger), float(weight)
    weights: dict[int, dict[str, float]] = defaultdict(dict)
    zero: dict[int, set[str]] = defaultdict(set)
    groups: dict[tuple[int, int], list[tuple[Any, ...]]] = defaultdict(list)
    rows_of: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for row in fetched:
        iteration_id, condition_id, eval_id, case_id = row[:4]
        weights[iteration_id][eval_id] = case_weights[case_id]
        if row[8]:  # zero_assertions
            zero[iteration_id].add(eval_id)
        groups[iteration_id, condition_id].append(row)
        rows_of[iteration_id].append(row)
    names = {pk: condition[0] for pk, condition in conditions.items()}
    cells: dict[int, list[_Cell]] = defaultdict(list)
    for (iteration_id, condition_id), rows in groups.items():
        cells[iteration_id].append(_Cell.from_rows(conditions[condition_id], rows, triggers))
    return {
        pk: _summary(
            iteration,
            sorted(cells[pk], key=lambda c: (c.position, c.name)),
            weights[pk],
            zero[pk],
            rows_of[pk],
            names,
        )
        for pk, iteration in by_id.items()
    }


def _summary(
    iteration: Iteration,
    cells: list[_Cell],
    weights: dict[str, float],
    zero: set[str],
    cell_rows: list[tuple[Any, ...]],
    condition_names: dict[int, str],
) -> IterationSummary:
    conditions = [_condition(cell, weights) for cell in cells]
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


def _condition(cell: _Cell, weights: dict[str, float]) -> ConditionSummary:
    invocation = false_trigger = None
    if cell.loads_skill:
        if cell.positive_evals and cell.checked:
            invocation = _proportion(cell.invoked, cell.checked)
        if cell.negative_evals:
            false_trigger = _proportion(cell.false_triggers, cell.negative_checked)
    return ConditionSummary(
        name=cell.name,
        role=cell.role,
        loads_skill=cell.loads_skill,
        score=stats.score_from_eval_scores(
            cell.name, cell.per_eval, n_runs=cell.graded, weights=weights
        ),
        runs=cell.runs,
        graded=cell.graded,
        errored=cell.errored,
        invocation=invocation,
        false_trigger=false_trigger,
        mean_tokens=_mean(cell.tokens, cell.tokens_n),
        mean_duration_ms=_mean(cell.duration, cell.duration_n),
    )


def _proportion(successes: int, n: int) -> stats.Proportion:
    return stats.Proportion(successes, n, stats.wilson_interval(successes, n))
