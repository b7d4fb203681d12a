"""Distribution functions the intervals need, in pure Python (no scipy/numpy dependency).

The Student-t distribution goes through the regularized incomplete beta function,
evaluated with the Lentz continued fraction of Numerical Recipes (§6.4), and is inverted by
bisection, which is slow-ish but cannot diverge; results are cached per (p, df).
"""

from __future__ import annotations

import functools
import math
from functools import lru_cache
from statistics import NormalDist

_TINY = 1e-300
_EPS = 1e-15
_MAX_ITERATIONS = 500


def _beta_continued_fraction(x: float, a: float, b: float) -> float:
    """Return the continued fraction of I_x(a, b) by modified Lentz (fast for x < (a+1)/(a+b+2))."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_ITERATIONS):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"incomplete beta did not converge for x={x}, a={a}, b={b}")


def regularized_incomplete_beta(x: float, a: float, b: float) -> float:
    """Return I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1 and a, b > 0."""
    if not (a > 0 and b > 0):
        raise ValueError("a and b must be positive")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    # The fraction converges fast only on one side of the mean; use the symmetry
    # I_x(a, b) = 1 - I_{1-x}(b, a) on the other.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(x, a, b) / a
    return 1.0 - front * _beta_continued_fraction(1.0 - x, b, a) / b


def t_upper_tail(t: float, df: float) -> float:
    """Return P(T > t) for Student's t with df degrees of freedom (df may be fractional)."""
    if df <= 0:
        raise ValueError("df must be positive")
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    half_tail = 0.5 * regularized_incomplete_beta(df / (df + t * t), df / 2.0, 0.5)
    return half_tail if t >= 0 else 1.0 - half_tail


def t_cdf(t: float, df: float) -> float:
    """Return P(T <= t) for Student's t with df degrees of freedom."""
    return 1.0 - t_upper_tail(t, df)


@lru_cache(maxsize=1024)
@functools.lru_cache(maxsize=1024)
def t_quantile(p: float, df: float) -> float:
    """Return the p-quantile of Student's t with df degrees of freedom (0.975 at df 4 → 2.776).

    Cached: pages ask for the same few (0.975, n − 1) pairs once per iteration they show.
    """
    if not 0.0 < p < 1.0:
        raise ValueError("p must be strictly between 0 and 1")
    if df <= 0:
        raise ValueError("df must be positive")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    # Solve on the upper tail, which stays accurate where 1 - p would lose digits.
    tail = 1.0 - p
    low, high = 0.0, 1.0
    while t_upper_tail(high, df) > tail:
        low, high = high, high * 2.0
        if high > 1e300:
            return math.inf
    for _ in range(_MAX_ITERATIONS):
        middle = (low + high) / 2.0
        if middle in (low, high) or high - low <= 1e-13 * high:
            break
        if t_upper_tail(middle, df) > tail:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def normal_quantile(p: float) -> float:
    """Return the p-quantile of the standard normal distribution."""
    return NormalDist().inv_cdf(p)
