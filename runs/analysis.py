"""What pages and the API show about iterations: the statistics module fed from SQL.

Each function here asks the database one page-sized question (one GROUP BY for any number
of iterations, one row query for a single iteration) and hands plain rows to `runs.stats`,
so every figure a person reads comes from the same code, with its interval and verdict.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.db.models import F

from grading.models import AssertionResult

from . import stats
from .importing.eval_magic import DEFAULT_ORDER
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

    iteration: Iteration | None  # None only inside the cache
    conditions: list[ConditionSummary]
    treatment: ConditionSummary | None
    control: ConditionSummary | None
    delta: stats.PairedDelta | None
    verdict: str
    evals: list[str] = field(default_factory=list)
    zero_assertion_evals: list[str] = field(default_factory=list)

    @property
    def token_delta(self) -> float | None:
        if not self.treatment or not self.control:
            return None
        if self.treatment.mean_tokens is None or self.control.mean_tokens is None:
            return None
        return self.treatment.mean_tokens - self.control.mean_tokens

    @property
    def gain_per_1k_tokens(self) -> float | None:
        """Pass-rate gain per extra 1k tokens the treatment spends; None if it spends none."""
        if self.delta is None or self.token_delta is None:
            return None
        return stats.pass_rate_gain_per_1k_tokens(self.delta.mean, self.token_delta)


def _mean(total: float | None, n: int) -> float | None:
    return total / n if n and total is not None else None


def _pick(conditions: list[ConditionSummary], role: str) -> ConditionSummary | None:
    # Conditions arrive in the source's order: the first of a role is the one compared.
    return next((c for c in conditions if c.role == role), None)


#: Summaries are a pure function of an iteration's imported data, which changes only when it
#: is saved again (re-import or update): its content hash and updated_at key the cache.
SUMMARY_CACHE_SECONDS = 24 * 3600


def _cache_key(iteration: Iteration) -> str:
    stamp = iteration.updated_at.timestamp() if iteration.updated_at else 0
    return f"evalsite:summary:v1:{iteration.pk}:{iteration.content_hash}:{stamp}"


def summarise_iterations(iterations: Sequence[Iteration]) -> dict[int, IterationSummary]:
    """iteration id → summary: from the cache, else computed for all missing ones at once."""
    if not iterations:
        return {}
    keys = {it.pk: _cache_key(it) for it in iterations}
    cached = cache.get_many(list(keys.values()))
    found = {
        it.pk: replace(cached[keys[it.pk]], iteration=it)
        for it in iterations
        if keys[it.pk] in cached
    }
    missing = [it for it in iterations if it.pk not in found]
    if missing:
        computed = _compute_summaries(missing)
        # Cached without the iteration itself: callers hold it already, and unpickling a
        # model instance per summary cost more than the summary.
        cache.set_many(
            {keys[pk]: replace(summary, iteration=None) for pk, summary in computed.items()},
            SUMMARY_CACHE_SECONDS,
        )
        found.update(computed)
    return found


@dataclass
class _Cell:
    """Running totals of one condition of one iteration, over its evals' aggregate rows."""

    name: str
    role: str
    loads_skill: bool
    position: int
    per_eval: dict[str, float] = field(default_factory=dict)
    runs: int = 0
    graded: int = 0
    errored: int = 0
    invoked: int = 0  # evals that should trigger: meta verdict, else transcript
    checked: int = 0
    positive_evals: int = 0
    false_triggers: int = 0  # negative evals: Skill calls in the transcript
    negative_checked: int = 0
    negative_evals: int = 0
    tokens: float = 0.0
    tokens_n: int = 0
    duration: float = 0.0
    duration_n: int = 0


def _compute_summaries(iterations: Sequence[Iteration]) -> dict[int, IterationSummary]:
    """iteration id → summary, for any number of iterations in three queries.

    One GROUP BY gives the cells; the conditions' and evals' own attributes (name, role,
    position; trigger expectation, weight) come once each rather than in every cell row.
    The rows are folded into per-condition totals in one pass: at a skill's 20 iterations ×
    30 evals, per-row dictionaries cost as much as the query.
    """
    by_id = {it.pk: it for it in iterations}
    # Django writes the SQL; the rows are fetched raw: per-value converters cost more than
    # the query itself on 1,000+ rows, and these are plain counts and sums.
    sql, params = (
        Run.objects.filter(iteration_id__in=by_id).cell_aggregates().query.sql_with_params()
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    conditions = {
        pk: (name, role, loads, position)
        for pk, name, role, loads, position in Condition.objects.filter(
            iteration_id__in=by_id
        ).values_list("pk", "name", "role", "loads_skill", "position")
    }
    cases = {
        pk: (bool(trigger), float(weight))
        for pk, trigger, weight in EvalCase.objects.filter(
            pk__in={row[3] for row in fetched}
        ).values_list("pk", "skill_should_trigger", "weight")
    }
    cells: dict[int, dict[int, _Cell]] = defaultdict(dict)
    weights: dict[int, dict[str, float]] = defaultdict(dict)
    zero: dict[int, set[str]] = defaultdict(set)
    for (
        iteration_id, condition_id, eval_id, case_id, runs, graded, pass_sum, errored,
        zero_assertions, invoked, invocation_n, called, called_n, tokens, tokens_n,
        duration, duration_n,
    ) in fetched:  # fmt: skip
        cell = cells[iteration_id].get(condition_id)
        if cell is None:
            cell = cells[iteration_id][condition_id] = _Cell(*conditions[condition_id])
        should_trigger, weights[iteration_id][eval_id] = cases[case_id]
        if graded:
            cell.per_eval[eval_id] = float(pass_sum) / graded
        if zero_assertions:
            zero[iteration_id].add(eval_id)
        cell.runs += runs
        cell.graded += graded
        cell.errored += errored
        if should_trigger:
            cell.positive_evals += 1
            cell.invoked += invoked if invocation_n else called
            cell.checked += invocation_n or called_n
        else:
            cell.negative_evals += 1
            cell.false_triggers += called
            cell.negative_checked += called_n
        # PostgreSQL sums bigints as Decimal.
        cell.tokens += float(tokens or 0)
        cell.tokens_n += tokens_n
        cell.duration += float(duration or 0)
        cell.duration_n += duration_n
    return {
        pk: _summary(
            iteration,
            sorted(cells[pk].values(), key=lambda c: (c.position, c.name)),
            weights[pk],
            zero[pk],
        )
        for pk, iteration in by_id.items()
    }


def _summary(
    iteration: Iteration, cells: list[_Cell], weights: dict[str, float], zero: set[str]
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


def run_samples(iteration: Iteration) -> list[dict[str, Any]]:
    """The iteration's runs as `RunSample` rows; errored runs have no pass rate."""
    rows = list(Run.objects.filter(iteration=iteration).samples())
    for row in rows:
        row["condition"] = row.pop("condition__name")
        if row["status"] == "errored":
            row["pass_rate"] = None
    return rows


def assertion_outcomes(iterations: Iterable[Iteration]) -> list[dict[str, Any]]:
    """Every substantive assertion result of the iterations, as `AssertionOutcome` rows.

    `passed` is the reviewer's override where there is one: overrides count in every statistic.
    """
    rows = list(
        AssertionResult.objects.filter(grading__run__iteration__in=list(iterations), is_meta=False)
        .exclude(grading__run__status="errored")
        .order_by()
        .values(
            "assertion_id",
            "passed",
            "override_passed",
            iteration_id=F("grading__run__iteration_id"),
            eval_id=F("grading__run__eval_id"),
            condition=F("grading__run__condition__name"),
            run_index=F("grading__run__run_index"),
        )
    )
    for row in rows:
        override = row.pop("override_passed")
        if override is not None:
            row["passed"] = override
    return rows


def eval_magic_benchmark(iteration: Iteration) -> dict[str, Any]:
    """SPEC §4.1: the benchmark.json eval-magic would write for this iteration, recomputed."""
    conditions = list(iteration.conditions.all())
    names = [c.name for c in conditions]
    recorded = (iteration.recorded_benchmark or {}).get("conditions_compared")
    if recorded and set(recorded) <= set(names):
        compared = list(recorded)
    elif set(DEFAULT_ORDER[iteration.mode]) <= set(names):
        compared = DEFAULT_ORDER[iteration.mode]  # eval-magic's order for the mode
    else:
        compared = names[:2]
    if len(compared) < 2:
        raise ValueError(f"{iteration} has one condition; a benchmark compares two")
    generated = ""
    if iteration.generated_at:
        generated = iteration.generated_at.isoformat().replace("+00:00", "Z")
    return stats.build_benchmark(
        run_samples(iteration),
        mode=iteration.mode,
        conditions_compared=compared,
        skill_conditions={c.name for c in conditions if c.loads_skill},
        generated=generated,
        baseline=iteration.baseline or None,
        validity_warnings=iteration.validity_warnings,
        outcomes=assertion_outcomes([iteration]),
    )
