"""The compare page's headline: how the treatment − control delta changed between two
iterations, then how the treatment score did, each with an interval only where one means
something, and the settings that changed beside them.

The changes themselves are `compare_iterations`' paired deltas (paired by eval, clustered
intervals, sign-flip p); this module decides what can honestly be said about them:

- deltas of a new-skill iteration (skill − no skill) and of a revision (new − old skill)
  measure different things, so their difference gets no verdict;
- an interval needs 2 evals and some spread between them: when every eval moved by exactly
  the same amount (typically the same single runs on both sides) the t interval has zero
  width, which reads as a certainty it is not, so the sentence says why there is none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .compare import IterationComparison, IterationProfile, IterationRuns, SettingDifference
from .rows import as_run_samples
from .scores import PairedDelta
from .verdicts import MIN_EVALS, count_phrase, delta_verdict, format_p_value, signed

MODE_MEANING = {
    "new-skill": "the skill against no skill",
    "revision": "the new version of the skill against the old",
}


@dataclass(frozen=True)
class HeadlineChange:
    """after − before of one per-eval quantity, paired by eval, and the sentence about it.

    `delta` is None when nothing was computed (no shared eval, no control, or not
    comparable); its interval is None where it cannot be computed, `no_interval` says why.
    """

    sentence: str
    delta: PairedDelta | None = None
    no_interval: str = ""


@dataclass(frozen=True)
class CompareHeadline:
    """What changed from before to after: the delta's change (None for two conditions of
    one iteration, where there is no delta), the treatment's, and the settings that differ."""

    delta_change: HeadlineChange | None
    treatment_change: HeadlineChange
    differences: list[SettingDifference] = field(default_factory=list)

    @property
    def delta_comparable(self) -> bool:
        """Whether the two deltas measure the same thing (so their change has a verdict)."""
        return self.delta_change is not None and self.delta_change.delta is not None


def most_runs_per_eval(side: IterationRuns) -> int:
    """The most graded runs any (eval, condition) of the side's two conditions has; 0 for none."""
    counts = Counter(
        (run.eval_id, run.condition)
        for run in as_run_samples(side.runs)
        if run.pass_rate is not None and run.condition in (side.treatment, side.control)
    )
    return max(counts.values(), default=0)


def no_interval_reason(delta: PairedDelta, *, runs_per_eval: int) -> str:
    """Why `delta` has no interval worth showing, "" when it has one.

    Fewer than 2 evals give none at all; zero spread between the evals' differences gives a
    zero-width one, which is not certainty: with 1 run per eval it is usually the same
    single runs on both sides.
    """
    if delta.n < MIN_EVALS:
        return f"{count_phrase(delta.n)} in both: no interval"
    if delta.interval is None or not delta.se:
        if runs_per_eval <= 1:
            return "1 run per eval: no interval"
        return "no spread between evals: no interval"
    return ""


def change_sentence(
    delta: PairedDelta | None,
    *,
    before: str,
    after: str,
    runs_per_eval: int,
    alpha: float = 0.05,
) -> HeadlineChange:
    """The verdict on after − before: the site's `delta_verdict` where there is an interval,
    else the figures with the reason there is none (and p where the sign-flip test gives one).
    """
    if delta is None:
        return HeadlineChange(f"no eval has a score in both {before} and {after}")
    reason = no_interval_reason(delta, runs_per_eval=runs_per_eval)
    if not reason:
        return HeadlineChange(delta_verdict(delta, treatment=after, control=before), delta)
    delta = replace(delta, se=None, interval=None)
    counted = count_phrase(delta.n)
    if delta.differences and all(d == 0 for d in delta.differences.values()):
        sentence = f"no change: each of {counted} scored the same in both ({reason})"
    elif delta.n < MIN_EVALS:
        sentence = f"too little data to tell: {signed(delta.mean)} on {counted} ({reason})"
    else:
        p_text = f"; {format_p_value(delta.p_value)}" if delta.p_value is not None else ""
        if delta.p_value is not None and delta.p_value < alpha:
            winner, loser = (after, before) if delta.mean > 0 else (before, after)
            sentence = (
                f"{winner} beats {loser} by {signed(abs(delta.mean))} ({reason}{p_text}, {counted})"
            )
        else:
            sentence = (
                f"difference not distinguishable from noise ({signed(delta.mean)}; "
                f"{reason}{p_text}, {counted})"
            )
    return HeadlineChange(sentence, delta, reason)


def _not_comparable(
    before: IterationRuns,
    after: IterationRuns,
    profiles: tuple[IterationProfile, IterationProfile],
) -> str:
    """Why the deltas of the two sides cannot be compared, "" when they can."""
    if not before.control or not after.control:
        missing = before.label if not before.control else after.label
        return f"not comparable: {missing} has no control condition, so no delta"
    modes = (profiles[0].mode, profiles[1].mode)
    if modes[0] and modes[1] and modes[0] != modes[1]:
        parts = [
            f"{side.label} is a {mode} iteration ({MODE_MEANING.get(mode, mode)})"
            for side, mode in zip((before, after), modes, strict=True)
        ]
        return f"not comparable: {parts[0]}, {parts[1]}; their deltas measure different things"
    return ""


def compare_headline(
    before: IterationRuns,
    after: IterationRuns,
    result: IterationComparison,
    *,
    profiles: tuple[IterationProfile, IterationProfile] | None = None,
    differences: Sequence[SettingDifference] = (),
) -> CompareHeadline:
    """The headline of a comparison of two iterations (`profiles` given) or of two
    conditions of one iteration (`profiles` None: no delta, only the treatment change)."""
    runs_per_eval = max(most_runs_per_eval(before), most_runs_per_eval(after))
    labels = {"before": before.label, "after": after.label}
    treatment = change_sentence(result.treatment_change, runs_per_eval=runs_per_eval, **labels)
    delta_change = None
    if profiles is not None:
        reason = _not_comparable(before, after, profiles)
        if reason:
            delta_change = HeadlineChange(reason)
        else:
            delta_change = change_sentence(
                result.delta_change, runs_per_eval=runs_per_eval, **labels
            )
    return CompareHeadline(delta_change, treatment, list(differences))
