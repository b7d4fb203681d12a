"""What runevals says when it is done: one summary line (or JSON) and whether it regressed."""

from __future__ import annotations

from typing import Any

from runs.models import Iteration
from runs.reading.compare import compare
from runs.reading.summaries import summarise_iterations
from runs.stats import format_interval, signed

from .runner import IterationRun


def iteration_report(result: IterationRun) -> dict[str, Any]:
    """Figures of the imported iteration, its verdict, and regressions vs the previous one.

    A regression is a treatment − control delta whose interval lies below 0, or an eval
    whose treatment score fell significantly since the previous iteration (Holm-corrected).
    """
    iteration = Iteration.objects.select_related("skill").get(
        skill__name=result.skill, source_path=str(result.folder)
    )
    summary = summarise_iterations([iteration])[iteration.pk]
    previous = (
        Iteration.objects.filter(skill=iteration.skill, number__lt=iteration.number)
        .order_by("-number")
        .first()
    )
    regressed_evals: list[str] = []
    if previous is not None:
        comparison = compare(previous, iteration)
        regressed_evals = [e.eval_id for e in comparison.result.evals if e.badge == "regressed"]
    delta = summary.delta
    negative = bool(delta and delta.significant and delta.mean < 0)
    scores = {c.name: round(c.score.mean, 4) if c.score else None for c in summary.conditions}
    parts = [f"{result.skill} #{iteration.number} ({iteration.label})"]
    parts.append(
        ", ".join(
            f"{name} {score:.2f}" if score is not None else f"{name} –"
            for name, score in scores.items()
        )
    )
    if delta and delta.interval:
        parts.append(f"delta {signed(delta.mean)} (95% CI {format_interval(delta.interval)})")
    parts.append(summary.verdict)
    if regressed_evals:
        parts.append(f"regressed since #{previous.number}: {', '.join(regressed_evals)}")
    parts.append(
        f"{len(result.outcomes)} runs ({result.errored} errored"
        f"{', resumed' if result.resumed else ''}), {result.api_calls} API calls, "
        f"{result.tokens} tokens"
    )
    return {
        "skill": result.skill,
        "iteration": iteration.number,
        "label": iteration.label,
        "folder": str(result.folder),
        "scores": scores,
        "delta": delta.mean if delta else None,
        "delta_interval": [delta.interval.low, delta.interval.high]
        if delta and delta.interval
        else None,
        "verdict": summary.verdict,
        "runs": len(result.outcomes),
        "errored": result.errored,
        "api_calls": result.api_calls,
        "tokens": result.tokens,
        "regressed_evals": regressed_evals,
        "regression": negative or bool(regressed_evals),
        "summary": "; ".join(parts),
    }
