"""How many evals a comparison needs before its tests can say anything.

The delta's p-value is an exact two-sided sign-flip permutation test over the n evals'
differences: the most extreme of its 2^n relabellings, with its mirror image, gives the
smallest p it can ever report, 2 / 2^n. So with n ≤ 5 evals p < 0.05 is out of reach
whatever the skill does (2/32 = 0.0625), and a page saying "not significant" must say why.
"""

from __future__ import annotations

import math

from .distributions import t_quantile
from .scores import PairedDelta
from .verdicts import count_phrase, signed

#: Where the search for a number of evals stops: beyond it, "more than 1,000".
MAX_EVALS = 1000


def smallest_p_value(n: int) -> float:
    """The smallest two-sided p an exact sign-flip test over n differences can give."""
    if n < 1:
        return 1.0
    return min(1.0, 2.0 / 2.0**n)


def evals_to_reach(alpha: float = 0.05) -> int:
    """The fewest evals with which the sign-flip test can reach p < alpha at all (6 for 0.05)."""
    n = 1
    while smallest_p_value(n) >= alpha:
        n += 1
    return n


def evals_needed(
    mean: float, sd: float | None, *, alpha: float = 0.05, confidence: float = 0.95
) -> int | None:
    """The fewest evals at which an effect of `mean` with per-eval spread `sd` would show.

    That is: at least `evals_to_reach(alpha)`, and enough for the t interval (as the pages
    compute it) of that mean and sd to exclude 0. A planning figure for the author, assuming
    new evals behave like the ones run; None when there is no effect to detect, or when it
    would take more than MAX_EVALS.
    """
    if mean == 0 or sd is None or not math.isfinite(sd):
        return None
    floor = max(2, evals_to_reach(alpha))
    if sd == 0:
        return floor
    for n in range(floor, MAX_EVALS + 1):
        if t_quantile(1 - (1 - confidence) / 2, n - 1) * sd / math.sqrt(n) < abs(mean):
            return n
    return None


def power_note(delta: PairedDelta | None, *, alpha: float = 0.05) -> str:
    """A sentence when the delta's test cannot reach p < alpha with its evals; "" otherwise.

    "With 4 evals the permutation test can never reach p < 0.05 (its smallest p is 2/2^4 =
    0.125). An effect of +0.30 with this spread needs about 9 evals."
    """
    if delta is None or delta.n < 1 or smallest_p_value(delta.n) < alpha:
        return ""
    n = delta.n
    sentence = (
        f"With {count_phrase(n)} the permutation test can never reach p < {alpha:g} "
        f"(its smallest p is 2/2{_superscript(n)} = {smallest_p_value(n):.3g})."
    )
    sd = delta.se * math.sqrt(n) if delta.se is not None else None
    needed = evals_needed(delta.mean, sd, alpha=alpha)
    effect = f"An effect of {signed(delta.mean)} with this spread needs"
    if needed is not None:
        return f"{sentence} {effect} about {count_phrase(needed)}."
    if delta.mean != 0 and sd is not None:
        return f"{sentence} {effect} more than {MAX_EVALS:,} evals."
    return f"{sentence} Add evals: at least {evals_to_reach(alpha)} are needed."


def _superscript(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
