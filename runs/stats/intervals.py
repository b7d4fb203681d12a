"""Intervals and tests: Wilson, clustered mean, Welch, sign-flip and two-sample permutation, Holm.

All intervals are two-sided at `confidence` (95% by default). Intervals on quantities with
known bounds (pass rates in [0, 1], their differences in [-1, 1]) are clipped to the bounds:
a t interval of 3 evals can otherwise reach past 1, which no pass rate can.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from operator import getitem

from .distributions import normal_quantile, t_quantile

MONTE_CARLO_DRAWS = 20_000
MONTE_CARLO_SEED = 20240101
EXACT_SIGN_FLIP_LIMIT = 20
EXACT_RELABELLING_LIMIT = 50_000
# Bounds of the exact polynomial sign-flip count (see _exact_sign_flip_p_value): terms must be
# fractions over a modest common denominator, and the sums' range must fit in memory.
MAX_SIGN_FLIP_DENOMINATOR = 10_000
MAX_SIGN_FLIP_SCALE = 1_000_000
MAX_SIGN_FLIP_SPAN = 2_000_000
#: The largest counting polynomial the exact sign-flip test builds: 8 MB.
MAX_SIGN_FLIP_BITS = 64_000_000
# Floating-point sums of the same numbers in another order differ in the last bits; a flip
# whose statistic ties the observed one must still count as "at least as extreme".
TIE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Interval:
    """A closed interval [low, high]."""

    low: float
    high: float

    def contains(self, value: float) -> bool:
        """Return whether value lies in the interval (tolerating rounding error)."""
        return self.low - 1e-12 <= value <= self.high + 1e-12

    @property
    def spans_zero(self) -> bool:
        """Return whether 0 lies in the interval, i.e. the sign of the estimate is not settled."""
        return self.low <= 0.0 <= self.high

    def mirrored(self) -> Interval:
        """Return the interval of the negated quantity."""
        return Interval(-self.high, -self.low)


@dataclass(frozen=True)
class Estimate:
    """A mean with its standard error and interval; se and interval are None when n < 2."""

    value: float
    n: int
    se: float | None
    interval: Interval | None


def _clip(value: float, bounds: tuple[float, float] | None) -> float:
    if bounds is None:
        return value
    return min(max(value, bounds[0]), bounds[1])


def _two_sided_quantile(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be strictly between 0 and 1")
    return 1.0 - (1.0 - confidence) / 2.0


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> Interval | None:
    """Return the Wilson score interval for successes out of n, None when n is 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError("successes must be between 0 and n")
    z = normal_quantile(_two_sided_quantile(confidence))
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n))
    # At 0/n and n/n one bound is exactly 0 or 1; say so instead of 1e-17.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(low, high)


def t_interval(
    value: float,
    se: float,
    df: float,
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> Interval:
    """Return value ± t_{df} · se, clipped to bounds."""
    half = t_quantile(_two_sided_quantile(confidence), df) * se
    return Interval(_clip(value - half, bounds), _clip(value + half, bounds))


def mean_interval(
    values: Sequence[float],
    weights: Sequence[float] | None = None,
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> Estimate | None:
    """Return the (weighted) mean of independent units with a t interval; None for no values.

    With weights w_i summing to W and mean m = Σ w_i x_i / W, the standard error is the
    cluster-robust (CR1) one, treating each value as one cluster:

        SE = sqrt( n/(n−1) · Σ w_i² (x_i − m)² ) / W,     interval m ± t_{0.975, n−1} · SE.

    With all weights equal this is exactly sd/√n (sd with the n−1 divisor); scaling every
    weight by the same factor changes nothing. n = 1 gives no interval.
    """
    n = len(values)
    if n == 0:
        return None
    if weights is not None:
        if len(weights) != n:
            raise ValueError("values and weights differ in length")
        if list(weights).count(1.0) == n:
            weights = None  # the usual case; multiplying by 1.0 changes no bit
        elif any(w <= 0 for w in weights):
            raise ValueError("weights must be positive")
    if weights is None:
        total = float(n)
        mean = _clip(math.fsum(values) / total, bounds)
    else:
        total = math.fsum(weights)
        mean = math.fsum([w * x for w, x in zip(weights, values, strict=True)]) / total
        mean = _clip(mean, bounds)
    if n < 2:
        return Estimate(mean, n, None, None)
    if weights is None:
        spread = math.fsum([(x - mean) ** 2 for x in values])
    else:
        spread = math.fsum([w * w * (x - mean) ** 2 for w, x in zip(weights, values, strict=True)])
    se = math.sqrt(n / (n - 1) * spread) / total
    interval = t_interval(mean, se, n - 1, confidence=confidence, bounds=bounds)
    return Estimate(mean, n, se, interval)


def welch_interval(
    added: Sequence[Sequence[float]],
    subtracted: Sequence[Sequence[float]],
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> Estimate | None:
    """Return Σ mean(added) − Σ mean(subtracted) over independent samples, with a Welch interval.

    A plain difference is ([after], [before]); a change of delta, (T₁ − C₁) − (T₀ − C₀), is
    ([T₁, C₀], [T₀, C₁]). SE = sqrt(Σ s_j²/n_j), degrees of freedom by Welch–Satterthwaite.
    Every sample needs 2 values for an interval; when all have zero variance the interval
    is the point itself. None when a sample is empty.
    """
    samples = [*added, *subtracted]
    if not samples or any(len(s) == 0 for s in samples):
        return None
    value = math.fsum(math.fsum(s) / len(s) for s in added) - math.fsum(
        math.fsum(s) / len(s) for s in subtracted
    )
    n = min(len(s) for s in samples)
    if n < 2:
        return Estimate(value, n, None, None)
    terms = [_sample_variance(s) / len(s) for s in samples]
    se = math.sqrt(math.fsum(terms))
    if se == 0.0:
        point = _clip(value, bounds)
        return Estimate(value, n, 0.0, Interval(point, point))
    df = se**4 / math.fsum(t * t / (len(s) - 1) for t, s in zip(terms, samples, strict=True))
    return Estimate(value, n, se, t_interval(value, se, df, confidence=confidence, bounds=bounds))


def _sample_variance(values: Sequence[float]) -> float:
    mean = math.fsum(values) / len(values)
    return math.fsum((x - mean) ** 2 for x in values) / (len(values) - 1)


def sign_flip_p_value(
    differences: Sequence[float],
    weights: Sequence[float] | None = None,
    *,
    draws: int = MONTE_CARLO_DRAWS,
    seed: int = MONTE_CARLO_SEED,
) -> float | None:
    """Return the two-sided paired sign-flip permutation p-value of the (weighted) mean difference.

    p = share of sign vectors ε (identity included) with |Σ w_i ε_i d_i| ≥ |Σ w_i d_i| − tol.
    Exact over all 2^n vectors for n ≤ 20; beyond, (1 + hits) / (1 + draws) over `draws`
    seeded random vectors, so the same data always gives the same p. None for no pairs.
    """
    n = len(differences)
    if n == 0:
        return None
    if weights is None:
        weights = [1.0] * n
    terms = [w * d for w, d in zip(weights, differences, strict=True)]
    observed = abs(math.fsum(terms)) - TIE_TOLERANCE * math.fsum(weights)
    exact = _exact_sign_flip_p_value(terms, observed)
    if exact is not None:
        return exact
    if n <= EXACT_SIGN_FLIP_LIMIT:
        # Every signed sum, built by doubling; the first sign is fixed because ε and −ε give
        # the same |sum|, which halves the work (2^19 sums at n = 20).
        sums = [terms[0]]
        for term in terms[1:]:
            sums = [s + term for s in sums] + [s - term for s in sums]
        hits = sum(1 for s in sums if abs(s) >= observed)
        return hits / len(sums)
    # Hoeffding: P(|Σ ε_i t_i| ≥ T) ≤ 2 exp(−T² / (2 Σ t_i²)). Below 1/(1000 draws), the
    # Monte Carlo would find no flip as extreme with probability ≥ 99.9%: its answer is
    # known without drawing (a clear effect over hundreds of evals, the common big case).
    spread = math.fsum(t * t for t in terms)
    if observed > 0 and 2 * math.exp(-(observed**2) / (2 * spread)) < 1 / (1000 * draws):
        return 1 / (1 + draws)
    # Seeded Monte Carlo. A random flip of 8 terms at a time is a random byte indexing the
    # 256 signed sums of those 8, so a draw adds n/8 table entries instead of n terms: what
    # keeps a 300-eval iteration's first view fast.
    tables = _signed_sums_by_byte(terms)
    groups = len(tables)
    flips = random.Random(seed).randbytes(draws * groups)  # every draw's bytes at once
    hits = 0
    for start in range(0, draws * groups, groups):
        hits += abs(sum(map(getitem, tables, flips[start : start + groups]))) >= observed
    return (1 + hits) / (1 + draws)


def _signed_sums_by_byte(terms: Sequence[float]) -> list[list[float]]:
    """For each run of 8 terms, the signed sum of every one of its 2^8 sign patterns.

    A shorter last run's 2^k sums are repeated to 256 entries: each is still equally likely.
    """
    tables = []
    for start in range(0, len(terms), 8):
        sums = [0.0]
        for term in terms[start : start + 8]:
            sums = [s + term for s in sums] + [s - term for s in sums]
        tables.append(sums * (256 // len(sums)))
    return tables


@functools.lru_cache(maxsize=4096)
def _denominator(value: float) -> int | None:
    """The denominator of the simple fraction `value` is (within 1e-9), None if none is."""
    fraction = Fraction(value).limit_denominator(MAX_SIGN_FLIP_DENOMINATOR)
    return fraction.denominator if abs(float(fraction) - value) <= 1e-9 else None


def _common_scale(values: Sequence[float]) -> int | None:
    """The smallest integer L making every value × L whole (within 1e-9), None past 10^6."""
    scale = 1
    for value in values:
        if abs(value * scale - round(value * scale)) <= 1e-9:
            continue  # already whole at this scale: no fraction needed
        denominator = _denominator(value)
        if denominator is None:
            return None
        scale = math.lcm(scale, denominator)
        if scale > MAX_SIGN_FLIP_SCALE:
            return None
    return scale


def _exact_sign_flip_p_value(terms: Sequence[float], observed: float) -> float | None:
    """The exact sign-flip p-value over all 2^n flips, or None when it cannot be had cheaply.

    Pass-rate differences are fractions with small denominators (runs × assertions), so each
    term is an integer multiple t_i of 1/L. The count of flips reaching each signed sum is
    then the coefficient list of Π (x^-t_i + x^t_i), a polynomial kept as one Python integer
    with an (n + 2)-bit "digit" per coefficient (a count is at most 2^n): each factor is a
    shift and an add, done in C. The flips in a tail are the sum of a run of digits, which
    is that slice of the integer modulo 2^(n+2) − 1 (as a digit sum is a number modulo 9 in
    base 10), exact because it stays below 2^n. Milliseconds for 300 evals, where listing
    2^n sums cannot be done and 20,000 Monte Carlo draws took a second.
    """
    n = len(terms)
    scale = _common_scale(terms)
    if scale is None:
        return None
    steps = [abs(round(t * scale)) for t in terms]
    span = sum(steps)
    width = n + 2
    if span > MAX_SIGN_FLIP_SPAN or (2 * span + 1) * width > MAX_SIGN_FLIP_BITS:
        return None
    poly = 1  # digit k counts flips whose signed sum is (k − span) / scale
    for step in steps:
        poly += poly << (2 * step * width)
    threshold = observed * scale
    if threshold <= 0:
        return 1.0
    # Flips at least as extreme lie in both tails: k ≤ span − threshold or k ≥ span + t.
    low = math.floor(span - threshold)
    high = math.ceil(span + threshold)
    digit_sum = (1 << width) - 1
    hits = (poly >> (high * width)) % digit_sum
    if low >= 0:
        hits += (poly & ((1 << ((low + 1) * width)) - 1)) % digit_sum
    return hits / 2**n


def two_sample_permutation_p_value(
    first: Sequence[float],
    second: Sequence[float],
    *,
    draws: int = MONTE_CARLO_DRAWS,
    seed: int = MONTE_CARLO_SEED,
) -> float | None:
    """Return the two-sided permutation p-value of mean(second) − mean(first).

    Exact over every relabelling of the pooled values when there are at most 50,000 of them,
    seeded Monte Carlo beyond. One value per side gives p = 1: nothing can be concluded.
    None when a side is empty.
    """
    if not first or not second:
        return None
    pooled = [*first, *second]
    n_first, total = len(first), math.fsum(pooled)

    def statistic(first_sum: float) -> float:
        return abs((total - first_sum) / len(second) - first_sum / n_first)

    observed = statistic(math.fsum(first)) - TIE_TOLERANCE
    if math.comb(len(pooled), n_first) <= EXACT_RELABELLING_LIMIT:
        stats = [statistic(math.fsum(group)) for group in itertools.combinations(pooled, n_first)]
        return sum(1 for s in stats if s >= observed) / len(stats)
    rng = random.Random(seed)
    hits = 0
    for _ in range(draws):
        hits += statistic(math.fsum(rng.sample(pooled, n_first))) >= observed
    return (1 + hits) / (1 + draws)


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Return Holm–Bonferroni adjusted p-values, in the order given.

    The i-th smallest of m p-values becomes max over j ≤ i of min(1, (m − j + 1) · p_(j)),
    so rejecting where the adjusted p < α controls the family-wise error rate at α.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted
