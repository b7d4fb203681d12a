"""Plain-language sentences for the numbers a person reads as "better" or "worse".

Numbers are signed (+0.42, −0.10, 0.00) with the Unicode minus sign, two decimals for pass
rates and deltas, and always carry their interval and the count they rest on.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from .intervals import Interval
from .scores import ConditionScore, PairedDelta, Proportion

MINUS = "\u2212"
MIN_EVALS = 2


def signed(value: float, places: int = 2) -> str:
    """Return value with an explicit sign and a Unicode minus: "+0.42", "−0.10", "0.00"."""
    text = f"{abs(value):.{places}f}"
    if float(text) == 0.0:
        return text  # no sign on a value that shows as zero
    return ("+" if value > 0 else MINUS) + text


def unsigned(value: float, places: int = 2) -> str:
    """Return value with a Unicode minus when negative and no plus sign: "0.83", "−0.10"."""
    text = signed(value, places)
    return text[1:] if text.startswith("+") else text


def format_interval(interval: Interval, places: int = 2, *, with_sign: bool = True) -> str:
    """Return "low to high", e.g. "−0.10 to +0.25" (signed) or "0.61 to 1.00"."""
    show = signed if with_sign else unsigned
    return f"{show(interval.low, places)} to {show(interval.high, places)}"


def format_p_value(p: float) -> str:
    """Return "p = 0.008", "p = 0.25", "p = 1", or "p < 0.001" for very small values."""
    if p < 0.001:
        return "p < 0.001"
    # Half up, so the 2/32 of five evals all moving one way reads 0.063, not 0.062.
    text = str(Decimal(repr(p)).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))
    return f"p = {text.rstrip('0').rstrip('.')}"


def count_phrase(n: int, noun: str = "eval", plural: str | None = None) -> str:
    """Return "1 eval" / "12 evals" (or the `plural` given: "3 queries")."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def _confidence_label(confidence: float) -> str:
    return f"{confidence * 100:g}% CI"


def delta_verdict(
    delta: PairedDelta | None,
    *,
    treatment: str | None = None,
    control: str | None = None,
    confidence: float = 0.95,
    alpha: float = 0.05,
    unit: tuple[str, str] = ("eval", "evals"),
) -> str:
    """Return one sentence saying which side wins, by how much, and how sure that is.

    `unit` names what the differences were paired over (singular, plural).

    - interval above 0: "with_skill beats without_skill by +0.42 (95% CI +0.18 to +0.66,
      p = 0.008, 12 evals)";
    - interval below 0: the control wins, and the figures are restated as control −
      treatment so that "X beats Y by +d" always means X − Y = d: "without_skill beats
      with_skill by +0.42 (95% CI +0.18 to +0.66, …)";
    - interval spanning 0: "difference not distinguishable from noise (+0.08, 95% CI −0.10
      to +0.25, p = 0.31, 5 evals)", figures as treatment − control;
    - fewer than 2 evals in both arms: a sentence saying there is too little data.
    When the interval excludes 0 but the permutation p is not below alpha (common with 3–5
    evals, where p cannot go below 2/2^n), the sentence says chance is not ruled out.
    """
    treatment = treatment or (delta.treatment if delta else "treatment")
    control = control or (delta.control if delta else "control")
    n = delta.n if delta else 0
    counted = count_phrase(n, *unit)
    if delta is None or n < MIN_EVALS or delta.interval is None:
        return (
            f"too little data to compare {treatment} with {control}: "
            f"{counted} in both, at least {MIN_EVALS} needed"
        )
    ci = _confidence_label(confidence)
    p_text = f", {format_p_value(delta.p_value)}" if delta.p_value is not None else ""
    if delta.interval.spans_zero:
        return (
            f"difference not distinguishable from noise ({signed(delta.mean)}, "
            f"{ci} {format_interval(delta.interval)}{p_text}, {counted})"
        )
    winner, loser, amount, interval = treatment, control, delta.mean, delta.interval
    if delta.mean < 0:
        winner, loser, amount, interval = control, treatment, -delta.mean, interval.mirrored()
    sentence = (
        f"{winner} beats {loser} by {signed(amount)} "
        f"({ci} {format_interval(interval)}{p_text}, {counted})"
    )
    if delta.p_value is not None and delta.p_value >= alpha:
        sentence += ", though the permutation test cannot rule out chance"
    return sentence


def score_sentence(
    score: ConditionScore | None, *, condition: str | None = None, confidence: float = 0.95
) -> str:
    """Return "with_skill scores 0.83 (95% CI 0.61 to 1.00, 3 evals)" or says why it cannot."""
    name = condition or (score.condition if score else "this condition")
    if score is None:
        return f"{name} has no graded runs"
    if score.interval is None:
        return f"{name} scores {unsigned(score.mean)} ({count_phrase(score.n_evals)}, no interval)"
    return (
        f"{name} scores {unsigned(score.mean)} "
        f"({_confidence_label(confidence)} {format_interval(score.interval, with_sign=False)}, "
        f"{count_phrase(score.n_evals)})"
    )


def rate_sentence(
    proportion: Proportion, what: str = "invoked the skill", *, confidence: float = 0.95
) -> str:
    """Return "9 of 10 runs invoked the skill (90%, 95% CI 60% to 98%)" or "no runs to count"."""
    if proportion.n == 0 or proportion.rate is None or proportion.interval is None:
        return f"no runs to tell whether it {what}"
    low, high = proportion.interval.low, proportion.interval.high
    return (
        f"{proportion.successes} of {count_phrase(proportion.n, 'run')} {what} "
        f"({proportion.rate:.0%}, {_confidence_label(confidence)} {low:.0%} to {high:.0%})"
    )
