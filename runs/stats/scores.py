"""evalsite's own statistics (SPEC §4.2): scores per eval and condition, paired deltas,
pass@k / pass^k, skill-invocation and false-trigger rates, cost per gain.

The unit of analysis is the eval, not the run: runs of one eval share a prompt and fixtures
and are not independent, so every interval here treats per-eval scores as the samples
(clustering by eval, after Miller 2024, "Adding Error Bars to Evals").
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .intervals import Interval, mean_interval, sign_flip_p_value, wilson_interval
from .rows import RunRow, RunSample, as_run_samples

PASS_RATE_BOUNDS = (0.0, 1.0)
DELTA_BOUNDS = (-1.0, 1.0)


@dataclass(frozen=True)
class ConditionScore:
    """A condition's score: the (weighted) mean of its per-eval scores with a 95% interval."""

    condition: str
    mean: float
    n_evals: int
    n_runs: int
    se: float | None
    interval: Interval | None
    per_eval: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PairedDelta:
    """treatment − control over the evals both arms have a score for.

    `differences` maps eval id → d_i = treatment_i − control_i; `se` is the (weighted) sd of
    the d_i over √n, the interval a t interval on n − 1 df, `p_value` the two-sided
    sign-flip permutation p. se, interval are None when n < 2.
    """

    treatment: str
    control: str
    mean: float
    n: int
    se: float | None
    interval: Interval | None
    p_value: float | None
    differences: Mapping[str, float] = field(default_factory=dict)

    @property
    def significant(self) -> bool:
        """Return whether the interval excludes 0."""
        return self.interval is not None and not self.interval.spans_zero

    @property
    def signal(self) -> str:
        """ "significant" (interval excludes 0 and permutation p < 0.05), "suggestive"
        (the interval excludes 0 but, with few evals, the permutation test cannot rule out
        chance) or "noise" — the mark pages show beside a delta, agreeing with its verdict.
        """
        if not self.significant:
            return "noise"
        if self.p_value is not None and self.p_value >= 0.05:
            return "suggestive"
        return "significant"


@dataclass(frozen=True)
class Proportion:
    """successes out of n with a Wilson interval; rate and interval are None when n is 0."""

    successes: int
    n: int
    interval: Interval | None

    @property
    def rate(self) -> float | None:
        """Return successes / n, None when n is 0."""
        return self.successes / self.n if self.n else None


@dataclass(frozen=True)
class RepeatedRunScore:
    """pass@k and pass^k averaged over the evals of a condition with at least k graded runs."""

    k: int
    pass_at_k: float
    pass_hat_k: float
    n_evals: int


def per_eval_scores(runs: Iterable[RunRow], condition: str) -> dict[str, float]:
    """Return eval id → mean pass rate of the condition's graded runs, sorted by eval id."""
    rates: dict[str, list[float]] = defaultdict(list)
    for run in as_run_samples(runs):
        if run.condition == condition and run.pass_rate is not None:
            rates[run.eval_id].append(run.pass_rate)
    return {eval_id: math.fsum(v) / len(v) for eval_id, v in sorted(rates.items())}


def _weights_for(eval_ids: Iterable[str], weights: Mapping[str, float] | None) -> list[float]:
    # An eval without a declared weight weighs 1.0, the SWL default.
    if weights is None:
        return [1.0 for _ in eval_ids]
    get = weights.get
    return [float(get(e, 1.0)) for e in eval_ids]


def condition_score(
    runs: Iterable[RunRow],
    condition: str,
    *,
    weights: Mapping[str, float] | None = None,
    confidence: float = 0.95,
) -> ConditionScore | None:
    """Return the condition's score clustered by eval, None when it has no graded run.

    Score = Σ w_e s_e / Σ w_e over per-eval scores s_e; interval from `mean_interval`
    (SE = sqrt(n/(n−1) · Σ w_e² (s_e − score)²) / Σ w_e, t on n − 1 df); none for one eval.
    """
    samples = as_run_samples(runs)
    n_runs = sum(1 for r in samples if r.condition == condition and r.graded)
    return score_from_eval_scores(
        condition,
        per_eval_scores(samples, condition),
        n_runs=n_runs,
        weights=weights,
        confidence=confidence,
    )


def score_from_eval_scores(
    condition: str,
    scores: Mapping[str, float],
    *,
    n_runs: int,
    weights: Mapping[str, float] | None = None,
    confidence: float = 0.95,
) -> ConditionScore | None:
    """Return the clustered condition score from per-eval scores already aggregated (in SQL).

    Same figures as `condition_score`, for callers that hold per-eval means, not runs.
    """
    if not scores:
        return None
    estimate = mean_interval(
        list(scores.values()),
        _weights_for(scores, weights),
        confidence=confidence,
        bounds=PASS_RATE_BOUNDS,
    )
    assert estimate is not None  # scores is not empty
    return ConditionScore(
        condition, estimate.value, estimate.n, n_runs, estimate.se, estimate.interval, dict(scores)
    )


def paired_delta(
    treatment_scores: Mapping[str, float],
    control_scores: Mapping[str, float],
    *,
    treatment: str = "treatment",
    control: str = "control",
    weights: Mapping[str, float] | None = None,
    confidence: float = 0.95,
    bounds: tuple[float, float] = DELTA_BOUNDS,
) -> PairedDelta | None:
    """Return the paired treatment − control delta over shared evals, None when none are shared.

    The interval is clipped to `bounds`: [-1, 1] for differences of pass rates.
    """
    shared = sorted(set(treatment_scores) & set(control_scores))
    if not shared:
        return None
    differences = {e: treatment_scores[e] - control_scores[e] for e in shared}
    eval_weights = _weights_for(shared, weights)
    estimate = mean_interval(
        list(differences.values()), eval_weights, confidence=confidence, bounds=bounds
    )
    assert estimate is not None
    p_value = sign_flip_p_value(list(differences.values()), eval_weights)
    return PairedDelta(
        treatment,
        control,
        estimate.value,
        estimate.n,
        estimate.se,
        estimate.interval,
        p_value,
        differences,
    )


def condition_delta(
    runs: Iterable[RunRow],
    *,
    treatment: str,
    control: str,
    weights: Mapping[str, float] | None = None,
    confidence: float = 0.95,
) -> PairedDelta | None:
    """Return the paired delta between two conditions of one iteration, from its runs."""
    samples = as_run_samples(runs)
    return paired_delta(
        per_eval_scores(samples, treatment),
        per_eval_scores(samples, control),
        treatment=treatment,
        control=control,
        weights=weights,
        confidence=confidence,
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Return pass@k = 1 − C(n−c, k)/C(n, k): the chance that k of n runs hold a passing one."""
    _check_counts(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Return pass^k = C(c, k)/C(n, k): the chance that k of n runs all pass."""
    _check_counts(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_counts(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def repeated_run_score(runs: Iterable[RunRow], condition: str, k: int) -> RepeatedRunScore | None:
    """Return pass@k and pass^k averaged over the condition's evals with ≥ k graded runs.

    A run "passes" when every assertion passed (pass rate 1). None when no eval has k runs.
    """
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for run in as_run_samples(runs):
        if run.condition == condition and run.pass_rate is not None:
            counts[run.eval_id][0] += 1
            counts[run.eval_id][1] += run.pass_rate >= 1.0
    return repeated_run_score_of_counts(counts.values(), k)


def repeated_run_score_of_counts(
    counts: Iterable[Sequence[int]], k: int
) -> RepeatedRunScore | None:
    """`repeated_run_score` from each eval's (graded runs, passing runs), counted already."""
    eligible = [(n, c) for n, c in counts if n >= k]
    if not eligible:
        return None
    return RepeatedRunScore(
        k,
        math.fsum(pass_at_k(n, c, k) for n, c in eligible) / len(eligible),
        math.fsum(pass_hat_k(n, c, k) for n, c in eligible) / len(eligible),
        len(eligible),
    )


def _proportions(
    runs: Iterable[RunSample],
    skill_conditions: Collection[str],
    observe: Callable[[RunSample], bool | None],
    confidence: float,
) -> dict[str, Proportion]:
    counts = {condition: [0, 0] for condition in skill_conditions}
    for run in runs:
        seen = observe(run) if run.condition in counts else None
        if seen is not None:
            counts[run.condition][0] += seen
            counts[run.condition][1] += 1
    return {
        condition: Proportion(k, n, wilson_interval(k, n, confidence=confidence))
        for condition, (k, n) in counts.items()
    }


def skill_invocation_rate(
    runs: Iterable[RunRow],
    *,
    skill_conditions: Collection[str],
    should_trigger: Mapping[str, bool | None],
    confidence: float = 0.95,
) -> dict[str, Proportion]:
    """Return condition → share of runs that invoked the skill, with a Wilson interval.

    Only skill-loading conditions and evals whose skill_should_trigger is not False count;
    the grader's meta_summary verdict is used, else the transcript's.
    """
    positive = [r for r in as_run_samples(runs) if should_trigger.get(r.eval_id) is not False]
    return _proportions(
        positive,
        skill_conditions,
        lambda r: r.skill_invoked if r.skill_invoked is not None else r.invoked_in_transcript,
        confidence,
    )


def false_trigger_rate(
    runs: Iterable[RunRow],
    *,
    skill_conditions: Collection[str],
    should_trigger: Mapping[str, bool | None],
    confidence: float = 0.95,
) -> dict[str, Proportion]:
    """Return condition → share of negative-eval runs that invoked the skill anyway (Wilson).

    Negative evals are those with skill_should_trigger False; invocation comes from the
    transcript (they have no meta_summary), else from a meta verdict if one exists.
    """
    negative = [r for r in as_run_samples(runs) if should_trigger.get(r.eval_id) is False]
    return _proportions(
        negative,
        skill_conditions,
        lambda r: (
            r.invoked_in_transcript if r.invoked_in_transcript is not None else r.skill_invoked
        ),
        confidence,
    )


def pass_rate_gain_per_1k_tokens(pass_rate_delta: float, token_delta: float) -> float | None:
    """Return the pass-rate gain per extra 1,000 tokens, None unless the treatment costs more.

    When the treatment uses no more tokens the ratio has no meaning as a price (a cheaper
    skill that also helps is simply better); the page should say so instead.
    """
    if token_delta <= 0:
        return None
    return pass_rate_delta / (token_delta / 1000.0)
