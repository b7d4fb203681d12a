"""What a runevals campaign came to, and what runevals prints of it.

A `CampaignResult` is the workflow's outcome: the report of each iteration it imported (its
figures, verdict and regressions, kept with a queued iteration too), or, short of that, the
campaign it queued for the workers or the plans a dry run checked. `summary()` is the text
(or JSON) the command prints; `check()` turns a regression into exit status 1 when asked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grading.evaluating.plan import Plan
from grading.evaluating.runner import IterationRun, RunOutcome, Settings
from grading.sandbox import sandbox_problem
from runs import pricing
from runs.models import Iteration
from runs.reading.compare import compare
from runs.reading.summaries import IterationSummary, summarise_iterations
from runs.stats import format_interval, signed

from .models import Campaign
from .options import REGRESSION, CampaignError


@dataclass
class CampaignResult:
    """The reports of the iterations a campaign imported; a queued campaign left to the
    workers and a dry run's plans have none yet."""

    reports: list[dict[str, Any]] = field(default_factory=list)
    #: The queued campaign, when runevals did not wait for it.
    campaign: Campaign | None = None
    #: The plans a dry run checked, and what it found of the sandbox.
    plans: list[Plan] = field(default_factory=list)
    sandbox: str = ""
    #: Why the campaign stopped dispatching before its last run ("the budget of $5.00 would
    #: be exceeded"), "" when nothing stopped it. What finished is imported all the same.
    budget_stopped: str = ""
    #: Skills whose iteration the budget stop kept from starting at all.
    not_started: list[str] = field(default_factory=list)

    @property
    def regression(self) -> bool:
        return any(report["regression"] for report in self.reports)

    def check(self, *, fail_on_regression: bool) -> None:
        """CampaignError(exit 1) for a regression, when asked to fail on one, and for a
        budget stop: the campaign did not play all its runs (--resume finishes it)."""
        if fail_on_regression and self.regression:
            regressed = [r["skill"] for r in self.reports if r["regression"]]
            raise CampaignError(f"regression in {', '.join(regressed)}", REGRESSION)
        if self.budget_stopped:
            raise CampaignError(self.budget_stopped, REGRESSION)

    def summary(self, *, as_json: bool = False) -> str:
        """One line per imported iteration (JSON: its report, or the list of them); else the
        queued campaign's line, or the dry run's plans."""
        if self.reports:
            if as_json:
                reports = self.reports
                return json.dumps(reports if len(reports) > 1 else reports[0], indent=2)
            return "\n".join(report["summary"] for report in self.reports)
        if self.campaign is not None:
            return queued_json(self.campaign) if as_json else queued_line(self.campaign)
        return "\n".join(
            [*(line for plan in self.plans for line in plan_lines(plan)), self.sandbox]
        )


def iteration_report(result: IterationRun) -> dict[str, Any]:
    """Figures of the imported iteration, its verdict, and regressions vs the previous one.

    A regression is a treatment − control delta whose interval lies below 0, or an eval
    whose treatment score fell significantly since the previous iteration (Holm-corrected).
    """
    iteration = Iteration.objects.select_related("skill").get(
        skill__name=result.skill, source_path=str(result.folder)
    )
    summary = summarise_iterations([iteration])[iteration.pk]
    previous = iteration.previous()
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
    cost = result.cost_usd
    parts.append(
        f"{len(result.outcomes)} runs ({result.errored} errored"
        f"{', resumed' if result.resumed else ''}"
        f"{f', {result.not_played} not played: budget stop' if result.not_played else ''}), "
        f"{result.api_calls} API calls, {result.tokens} tokens, {_cost_text(cost, summary)}"
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
        "cost_usd": round(cost, 6) if cost is not None else None,
        "not_played": result.not_played,
        "regressed_evals": regressed_evals,
        "regression": negative or bool(regressed_evals),
        "summary": "; ".join(parts),
    }


def _cost_text(cost: float | None, summary: IterationSummary) -> str:
    """This invocation's spend (agent and judge) when each run priced it, else what the
    imported iteration's runs cost (a queued campaign's workers do not report it)."""
    if cost is not None:
        return pricing.format_usd(cost)
    agent = summary.cost
    if agent.total_usd is not None:
        return f"{pricing.format_usd(agent.total_usd)} for the iteration's agent runs"
    return f"cost unknown: {agent.note}"


def plan_lines(plan: Plan) -> list[str]:
    """A dry run's account of one skill's plan: its runs, assertions and API calls."""
    max_calls = Settings(Path()).max_calls
    fewest, most, judges = plan.api_calls(max_calls=max_calls)
    lines = [
        f"{plan.skill.name}: {plan.mode}, {len(plan.evals)} evals × "
        f"{len(plan.conditions)} conditions ({', '.join(c.name for c in plan.conditions)})"
        f" = {len(plan.runs)} runs; agent {plan.agent_model}, judge {plan.judge_model}"
    ]
    for case in plan.evals:
        kinds = ", ".join(sorted({a.get("type", "llm_judge") for a in case.assertions}))
        lines.append(
            f"  {case.eval_id}: {case.runs} run(s) per condition, "
            f"{len(case.assertions)} assertion(s){f' ({kinds})' if kinds else ''}"
            f"{', negative' if not case.skill_should_trigger else ''}"
        )
    lines.append(
        f"API calls: {fewest + judges} at least ({fewest} agent, {judges} judge), "
        f"at most {most + judges} (agent calls are capped at {max_calls} per run)"
    )
    lines.append(estimated_cost_line(plan, fewest=fewest, most=most, judges=judges))
    return lines


#: What a dry run assumes one call spends: an agent call reads the system prompt, tools and
#: conversation so far (uncached) and writes a turn; a judge call reads one run's record.
AGENT_CALL = pricing.Tokens(input=10_000, output=1_000)
JUDGE_CALL = pricing.Tokens(input=5_000, output=500)


def estimated_cost_line(plan: Plan, *, fewest: int, most: int, judges: int) -> str:
    """The plan's cost from its call bounds, at AGENT_CALL and JUDGE_CALL tokens a call."""
    agent, judge = pricing.price_of(plan.agent_model), pricing.price_of(plan.judge_model)
    if agent is None or (judges and judge is None):
        model = plan.agent_model if agent is None else plan.judge_model
        return f"Estimated cost: unknown, {pricing.no_price(model)} (add it to EVALSITE_PRICES)"
    judging = judges * pricing.cost_usd(judge, JUDGE_CALL) if judge is not None else 0.0
    low = fewest * pricing.cost_usd(agent, AGENT_CALL) + judging
    high = most * pricing.cost_usd(agent, AGENT_CALL) + judging
    return (
        f"Estimated cost: {pricing.format_usd(low)} to {pricing.format_usd(high)}, assuming "
        f"{AGENT_CALL.input // 1000}k input and {AGENT_CALL.output // 1000}k output tokens "
        f"an agent call and {JUDGE_CALL.input // 1000}k / {JUDGE_CALL.output / 1000:g}k a "
        "judge call, no cache (cache reads cost less, long conversations more)"
    )


def budget_line(stopped: str, not_started: list[str]) -> str:
    """The one line runevals prints when the spending limit stopped it, "" otherwise."""
    if not stopped:
        return ""
    later = f"; not started: {', '.join(not_started)}" if not_started else ""
    return f"{stopped}{later}; what finished is imported, --resume plays the rest"


def sandbox_line(*, sandboxed: bool) -> str:
    """Whether a real run would sandbox agents' commands here."""
    if not sandboxed:
        return "Sandbox: off (--unsafe-no-sandbox)"
    problem = sandbox_problem()
    if problem is None:
        return "Sandbox: bubblewrap"
    return f"Sandbox: unavailable here ({problem}); a real run needs --unsafe-no-sandbox"


def queued_line(campaign: Campaign) -> str:
    iterations = campaign.iterations.order_by("pk")
    parts = ", ".join(f"{q.skill_name} {q.label} ({q.runs.count()} runs)" for q in iterations)
    return (
        f"Queued {campaign}: {parts}; progress at {campaign.get_absolute_url()} "
        "(workers: celery -A evalsite worker)"
    )


def queued_json(campaign: Campaign) -> str:
    iterations = campaign.iterations.order_by("pk")
    return json.dumps(
        {
            "campaign": campaign.pk,
            "url": campaign.get_absolute_url(),
            "iterations": [
                {"skill": q.skill_name, "label": q.label, "runs": q.runs.count()}
                for q in iterations
            ],
        },
        indent=2,
    )


def progress_line(outcome: RunOutcome, done: int, total: int) -> str:
    """`[done/total] <run>: <passed>/<total> passed (…)`, as each run finishes."""
    if outcome.errored:
        detail = f"errored: {outcome.errored}"
    else:
        detail = f"{outcome.passed}/{outcome.total} passed"
    return (
        f"[{done}/{total}] {run_label(outcome)}: {detail} ({outcome.seconds:.1f} s, "
        f"{outcome.tokens + outcome.judge_tokens} tokens)"
    )


def run_label(outcome: RunOutcome) -> str:
    return outcome.run.relpath.removeprefix("eval-")
