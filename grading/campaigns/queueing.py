"""`runevals --queue`: a campaign recorded in the database, its runs sent to Celery workers.

`enqueue` records the campaign, ships each skill folder to the run store and sends each
eval × condition × run as a task; `wait` follows a queued campaign until its last iteration
is imported, sweeping for lost workers' runs as it goes (recovery.py).
"""

from __future__ import annotations

import functools
import os
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from grading.alerts.events import alert_failed
from grading.evaluating.plan import Plan, PlanError
from grading.evaluating.runner import Progress, Runner, Settings

from . import tasks
from .models import Campaign, QueuedIteration, QueuedRun
from .options import CampaignError, CampaignOptions
from .recovery import sweep
from .report import CampaignResult
from .store import RunStore, skill_archive


def holder() -> str:
    return f"runevals pid {os.getpid()} on {socket.gethostname()}"


def lock_message(locked: QueuedIteration) -> str:
    campaign = locked.campaign
    return (
        f"{locked.skill_name} is locked by queued {campaign} ({campaign.requested_by}, "
        f"since {campaign.created_at:%Y-%m-%d %H:%M} UTC; progress at "
        f"{campaign.get_absolute_url()})"
    )


def enqueue(plans: list[Plan], options: CampaignOptions, *, resume: bool = False) -> Campaign:
    """Record the campaign, ship each skill to the run store, send every run to the workers.

    The per-skill lock is the database's: one active queued iteration per skill (a unique
    constraint), released when it is imported; a campaign with no run activity for
    EVALSITE_QUEUE_STALE_AFTER loses it. With `resume`, the skill's newest unimported
    queued iteration is taken over instead: its finished runs are kept, errored and
    unfinished ones sent again.
    """
    if not settings.CELERY_BROKER_URL:
        raise CampaignError(
            "runevals --queue needs CELERY_BROKER_URL (a Redis URL, e.g. redis://host:6379/0)"
        )
    # conditions.json names the harness and its version, as a run here would.
    frame_settings = options.runner_settings(Path())
    store = RunStore()
    try:
        with transaction.atomic():
            campaign = Campaign.objects.create(requested_by=holder(), options=options.to_data())
            queued = [_queue_skill(campaign, plan, frame_settings, store, resume) for plan in plans]
    except IntegrityError:
        # Another runevals took the lock between our look and our insert.
        raise CampaignError("another runevals queued one of these skills just now") from None
    _send(campaign, queued)
    return campaign


def _queue_skill(
    campaign: Campaign, plan: Plan, frame_settings: Settings, store: RunStore, resume: bool
) -> QueuedIteration:
    name = plan.skill.name
    newest = QueuedIteration.objects.filter(skill_name=name).order_by("-pk").first()
    active = newest if newest is not None and newest.is_active else None
    if resume and newest is not None and newest.state != QueuedIteration.State.IMPORTED:
        return _take_over(campaign, newest)
    if active is not None:
        if not active.campaign.stale:
            raise CampaignError(lock_message(active))
        active.state = QueuedIteration.State.ABANDONED
        active.error = (
            f"abandoned: no run activity since {active.campaign.last_activity():%Y-%m-%d %H:%M} UTC"
        )
        active.save(update_fields=["state", "error"])
        if CampaignOptions.from_data(active.campaign.options).alerts:
            transaction.on_commit(
                functools.partial(
                    alert_failed,
                    [name],
                    active.error,
                    label=active.label,
                    campaign_path=active.campaign.get_absolute_url(),
                )
            )
    numbers = store.iteration_numbers(name) + [
        int(label.removeprefix("iteration-"))
        for label in QueuedIteration.objects.filter(skill_name=name).values_list("label", flat=True)
    ]
    label = f"iteration-{max(numbers, default=0) + 1}"
    try:
        data = plan.to_data()
    except PlanError as exc:
        raise CampaignError(str(exc)) from None
    iteration = QueuedIteration.objects.create(
        campaign=campaign, skill_name=name, label=label, plan=data
    )
    QueuedRun.objects.bulk_create(
        QueuedRun(
            iteration=iteration,
            eval_id=run.eval_id,
            condition=run.condition,
            run_index=run.run_index,
            multi=run.multi,
        )
        for run in plan.runs
    )
    # The iteration's frame (conditions.json, SKILL.md snapshot, evals.json), as runevals
    # writes it here, and the skill folder the workers play from.
    with tempfile.TemporaryDirectory(prefix="evalsite-queue-") as scratch:
        frame = Path(scratch) / label
        frame.mkdir()
        Runner(plan, None, frame_settings).write_conditions(frame)  # type: ignore[arg-type]
        store.put_folder(frame, iteration.store_key)
    store.write(f"{iteration.internals_key}/skill.tar.gz", skill_archive(plan.skill_dir))
    return iteration


def _take_over(campaign: Campaign, iteration: QueuedIteration) -> QueuedIteration:
    """--resume: the interrupted iteration joins this campaign; errored runs are run again."""
    iteration.runs.filter(state=QueuedRun.State.ERRORED).update(
        state=QueuedRun.State.PENDING, attempt="", error=""
    )
    if iteration.state != QueuedIteration.State.FINALISING:
        iteration.state = QueuedIteration.State.RUNNING
    iteration.campaign = campaign
    iteration.error = ""
    iteration.save(update_fields=["campaign", "state", "error"])
    return iteration


def _send(campaign: Campaign, queued: list[QueuedIteration]) -> None:
    """One Celery task per unfinished run; an iteration with none left is finalised."""
    try:
        for iteration in queued:
            unfinished = iteration.runs.exclude(state__in=QueuedRun.FINISHED)
            unfinished.update(sent_at=timezone.now())  # the sweep's clock (recovery.py)
            pending = list(unfinished.values_list("pk", flat=True))
            if not pending:
                QueuedIteration.objects.filter(pk=iteration.pk).update(sent_at=timezone.now())
                tasks.finalise_iteration.apply_async((iteration.pk,), retry=False)
            for pk in pending:
                tasks.play_run.apply_async((pk,), retry=False)
    except Exception as exc:  # kombu raises its transports' own errors
        _withdraw(campaign, queued, reason=f"could not queue its runs: {_one_line(exc)}")
        raise CampaignError(
            f"cannot send runs to the broker at CELERY_BROKER_URL ({_one_line(exc)}): "
            "nothing was queued"
        ) from None


def _withdraw(campaign: Campaign, queued: list[QueuedIteration], *, reason: str) -> None:
    """Undo a campaign the broker refused: a new iteration goes (rows and store files), one
    taken over by --resume keeps what its runs recorded and is marked failed (resumable)."""
    store = RunStore()
    for iteration in queued:
        if iteration.runs.filter(attempts__gt=0).exists():
            iteration.state, iteration.error = QueuedIteration.State.FAILED, reason
            iteration.save(update_fields=["state", "error"])
            continue
        store.delete_folder(iteration.store_key)
        store.delete_folder(iteration.internals_key)
        iteration.delete()
    if not campaign.iterations.exists():
        campaign.delete()


def wait(
    campaign: Campaign,
    *,
    progress: Progress | None = None,
    poll: float = 1.0,
    warn: Callable[[str], None] | None = None,
) -> CampaignResult:
    """Block until every iteration of the campaign is imported (or failed), telling progress
    of each run as it finishes; the reports, or the first failure as a CampaignError.

    While it waits it sweeps its campaign, as each worker sweeps them all: a run whose
    worker is lost is sent again (recovery.py)."""
    reported: set[int] = set()
    runs = QueuedRun.objects.filter(iteration__campaign=campaign)
    total = runs.count()
    next_sweep = time.monotonic()
    while True:
        finished = campaign.finished  # read before the runs: none finishes unseen
        for run in runs.filter(state__in=QueuedRun.FINISHED).exclude(pk__in=reported):
            reported.add(run.pk)
            if progress is not None:
                progress(run.outcome(), len(reported), total)
        if finished:
            break
        if campaign.stale:
            stalled = CampaignError(
                f"{campaign} made no progress for {settings.EVALSITE_QUEUE_STALE_AFTER:.0f} s: "
                "is a worker running (celery -A evalsite worker)? It stays queued; "
                "runevals --queue --resume finishes it"
            )
            if CampaignOptions.from_data(campaign.options).alerts:  # no worker will say so
                skills = campaign.iterations.values_list("skill_name", flat=True)
                path = campaign.get_absolute_url()
                alert_failed(skills, str(stalled), campaign_path=path, warn=warn)
            raise stalled
        if time.monotonic() >= next_sweep:
            sweep(campaign=campaign)
            next_sweep = time.monotonic() + settings.EVALSITE_QUEUE_HEARTBEAT
        time.sleep(poll)
    result = CampaignResult()
    for iteration in campaign.iterations.order_by("pk"):
        if iteration.state != QueuedIteration.State.IMPORTED:
            raise CampaignError(f"{iteration}: {iteration.state}: {iteration.error}")
        result.reports.append(iteration.report)
    return result


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__
