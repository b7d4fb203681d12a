"""The runevals workflow: plan each skill, then run its iteration here or queue it for workers.

`run_evals` is the one entry (the command parses, calls it and prints its result's
summary): a dry run checks the plans and calls nothing; `run_here` plays every run in this
process (the single-machine default); with `queue`, the campaign goes to Celery workers
(queueing.py), and runevals either returns or waits until its last iteration is imported.
A CampaignError carries the exit status; what went wrong, regressed or hit the budget is
alerted (grading/alerts/events.py) without changing it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings

from grading.alerts.events import alert_budget_stopped, alert_failed, alert_imported
from grading.anthropic_client import anthropic_client
from grading.evaluating.folders import LockHeld
from grading.evaluating.plan import Plan, PlanError, make_plan
from grading.evaluating.runner import Progress, Runner
from grading.evaluating.spending import SpendingLimit, unpriced_models
from runs.importing import ImportFailure

from .models import QueuedIteration
from .options import CampaignError, CampaignOptions
from .queueing import enqueue, lock_message, wait
from .report import (
    CampaignResult,
    budget_line,
    iteration_report,
    queued_line,
    sandbox_line,
)

UNSANDBOXED_WARNING = (
    "runevals: --unsafe-no-sandbox: agents' commands and command checks run "
    "without the sandbox, with access to this machine's files and processes"
)


def _unheard(line: str) -> None:
    pass


def run_evals(
    *,
    skill_dirs: Sequence[Path],
    options: CampaignOptions,
    agent_model: str,
    judge_model: str,
    mode: str = "new-skill",
    baseline: str | None = None,
    runs: int = 1,
    only: Sequence[str] = (),
    dry_run: bool = False,
    queue: bool = False,
    wait_until_imported: bool = False,
    resume: bool = False,
    max_cost: float | None = None,
    max_tokens: int | None = None,
    spending: SpendingLimit | None = None,
    progress: Progress | None = None,
    tell: Callable[[str], None] = _unheard,
    warn: Callable[[str], None] = _unheard,
) -> CampaignResult:
    """Plan every skill, then play (or queue) and import an iteration of each.

    `tell` hears what happens along the way (the queued campaign, before waiting for it),
    `warn` that agents' commands are about to run unsandboxed, and any alert that could not be
    delivered; `progress` each finished run. Unless `options.alerts` is off, a failure, a
    regression played here and a budget stop are alerted (grading/alerts/); a queued
    iteration's regression or failure is alerted by the worker that finalises it.
    `spending`, when given, is a limit shared with other campaigns (grading/campaigns/axes.py).
    """
    if runs < 1 or options.concurrency < 1:
        raise CampaignError("--runs and --concurrency must be at least 1")
    if wait_until_imported and not queue:
        raise CampaignError("--wait follows a queued campaign: add --queue")
    spending = spending or spending_limit(max_cost, max_tokens, queue=queue)
    skills = [skill_dir.name for skill_dir in skill_dirs]
    try:
        plans = plan_skills(
            list(skill_dirs),
            mode=mode,
            baseline=baseline,
            runs=runs,
            only=list(only),
            agent_model=agent_model,
            judge_model=judge_model,
        )
        if spending.max_usd is not None and (unpriced := unpriced_models(models_of(plans))):
            raise CampaignError(
                f"--max-cost: no price for model {', '.join(unpriced)}; "
                "add a price to EVALSITE_PRICES"
            )
        if dry_run:
            return CampaignResult(plans=plans, sandbox=sandbox_line(sandboxed=options.sandbox))
        skills = [plan.skill.name for plan in plans]
        if not options.sandbox:
            warn(UNSANDBOXED_WARNING)
        if not queue:
            result = run_here(
                plans, options, resume=resume, progress=progress, spending=spending, warn=warn
            )
        else:
            campaign = enqueue(plans, options, resume=resume)
    except CampaignError as exc:
        # Failures before or while playing here; a queued campaign's own are its workers'.
        if options.alerts and not dry_run:
            alert_failed(skills, str(exc), warn=warn)
        raise
    if queue:
        if not wait_until_imported:
            return CampaignResult(campaign=campaign)
        tell(queued_line(campaign))
        result = wait(campaign, progress=progress, warn=warn)
    if result.budget_stopped and options.alerts:
        alert_budget_stopped(
            result.budget_stopped, skills=skills, reports=result.reports, warn=warn
        )
    return result


def spending_limit(max_cost: float | None, max_tokens: int | None, *, queue: bool) -> SpendingLimit:
    """The campaign's limit from --max-cost / --max-tokens, checked."""
    if (max_cost is not None and max_cost <= 0) or (max_tokens is not None and max_tokens < 1):
        raise CampaignError("--max-cost and --max-tokens must be more than 0")
    if queue and (max_cost is not None or max_tokens is not None):
        # Workers claim runs one by one and nothing adds up their spend before a claim yet.
        raise CampaignError("--max-cost and --max-tokens are not available with --queue")
    return SpendingLimit(max_usd=max_cost, max_tokens=max_tokens)


def models_of(plans: list[Plan]) -> set[str]:
    """Every model the plans call: agents, judges, and judges an assertion names."""
    models = {m for plan in plans for m in (plan.agent_model, plan.judge_model) if m}
    for plan in plans:
        for case in plan.evals:
            models.update(str(a["model"]) for a in case.assertions if a.get("model"))
    return models


def plan_skills(skill_dirs: list[Path], **plan_options: Any) -> list[Plan]:
    """make_plan for each skill folder; the first problem as a CampaignError."""
    try:
        return [make_plan(skill_dir, **plan_options) for skill_dir in skill_dirs]
    except PlanError as exc:
        raise CampaignError(str(exc)) from None


def run_here(
    plans: list[Plan],
    options: CampaignOptions,
    *,
    resume: bool = False,
    progress: Progress | None = None,
    spending: SpendingLimit | None = None,
    warn: Callable[[str], None] = _unheard,
) -> CampaignResult:
    """Play, grade, write and import each skill's iteration in this process; a regression
    is alerted as each is imported (`warn` hears a failed delivery). Once the spending
    limit stops the campaign, the skills not started are left for --resume."""
    if (problem := options.problem_playing_here()) is not None:
        raise CampaignError(problem)
    client = anthropic_client()
    result = CampaignResult()
    spending = spending or SpendingLimit()
    for plan in plans:
        if spending.stopped:
            result.not_started.append(plan.skill.name)
            continue
        locked = QueuedIteration.objects.active().filter(skill_name=plan.skill.name).first()
        if locked is not None and not locked.campaign.stale:
            raise CampaignError(lock_message(locked))
        runner_settings = options.runner_settings(settings.EVALSITE_WORKSPACE_DIR)
        runner_settings.spending = spending
        runner = Runner(plan, client, runner_settings, progress=progress)
        try:
            done = runner.run(resume=resume)
        except LockHeld as exc:
            raise CampaignError(str(exc)) from None
        except ImportFailure as exc:
            raise CampaignError(f"import failed: {exc.message}") from None
        result.reports.append(iteration_report(done))
        if options.alerts:
            alert_imported(result.reports[-1], warn=warn)
    result.budget_stopped = budget_line(spending.stopped, result.not_started)
    return result
