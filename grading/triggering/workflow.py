"""The `runevals --triggers` workflow: plan each skill's trigger campaign, play every
session, write one trigger-results.json per description tested and import each.

`run_trigger_evals` is the one entry; the command parses, calls it and prints its result's
summary. A campaign's folder is `<out>/<skill>/triggers-<UTC time>/` (out: the workspace,
as for eval iterations), holding `description-<k>/trigger-results.json` and each run's
conversation beside it. A CampaignError carries the exit status.
"""

from __future__ import annotations

import inspect
import json
import shutil
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from grading.anthropic_client import MessagesClient, anthropic_client
from grading.campaigns.options import REGRESSION, CampaignError, CampaignOptions
from grading.campaigns.report import sandbox_line
from grading.evaluating import registry
from grading.evaluating.folders import LockHeld, SkillLock
from grading.evaluating.harness import Harness
from grading.evaluating.plan import PlanError
from grading.evaluating.runfolder import write_json
from grading.evaluating.taskdir import build_template
from grading.sandbox import unsandboxed
from runs.importing import ImportFailure, import_workspace
from runs.stats.triggers import DEFAULT_THRESHOLD

from .plan import DEFAULT_SEED, TriggerPlan, make_trigger_plan, plan_lines
from .play import (
    DEFAULT_TIMEOUT_SECONDS,
    Session,
    SessionRecord,
    SessionSettings,
    play_session,
)
from .results import RESULTS_FILE, Provenance, summary_line, trigger_results

#: progress(record, done, total): one call per finished session.
Progress = Callable[[SessionRecord, int, int], None]


def _unheard(line: str) -> None:
    pass


@dataclass
class DescriptionReport:
    """One description tested: its folder, what was written and what the import did."""

    skill: str
    label: str
    folder: Path
    data: dict[str, Any]
    imported: str

    @property
    def passed(self) -> int:
        return int(self.data["summary"]["passed"])

    def line(self) -> str:
        return summary_line(self.data, label=self.label, imported=self.imported)


@dataclass
class TriggerCampaignResult:
    reports: list[DescriptionReport] = field(default_factory=list)
    #: A dry run's plans (nothing played), with the harness and model it would use.
    plans: list[TriggerPlan] = field(default_factory=list)
    dry_run_lines: list[str] = field(default_factory=list)

    def summary(self, *, as_json: bool = False) -> str:
        if as_json:
            return json.dumps(
                [{"folder": str(r.folder), "imported": r.imported, **r.data} for r in self.reports],
                indent=2,
                ensure_ascii=False,
            )
        if self.reports:
            return "\n".join(report.line() for report in self.reports)
        return "\n".join(self.dry_run_lines)

    def check(self, *, fail_on_regression: bool) -> None:
        """CampaignError(exit 1) when asked and a description passes fewer queries than the
        first one tested of its skill (SKILL.md's, or the first --description)."""
        if not fail_on_regression:
            return
        first: dict[str, int] = {}
        worse = []
        for report in self.reports:
            baseline = first.setdefault(report.skill, report.passed)
            if report.passed < baseline:
                worse.append(f"{report.skill} {report.label} ({report.passed} < {baseline})")
        if worse:
            raise CampaignError(
                f"regression: fewer queries pass than with the first description: "
                f"{', '.join(worse)}",
                REGRESSION,
            )


def run_trigger_evals(
    *,
    skill_dirs: Sequence[Path],
    options: CampaignOptions,
    agent_model: str,
    descriptions: Sequence[str] = (),
    runs: int = 3,
    siblings: bool = False,
    holdout: float | None = None,
    seed: int = DEFAULT_SEED,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    threshold: float = DEFAULT_THRESHOLD,
    out: Path | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    warn: Callable[[str], None] = _unheard,
) -> TriggerCampaignResult:
    """Plan every skill's campaign, then play, write and import each (nothing for a dry run)."""
    if runs < 1 or options.concurrency < 1:
        raise CampaignError("--runs and --concurrency must be at least 1")
    if holdout is not None and not 0 < holdout < 1:
        raise CampaignError(f"--holdout must be between 0 and 1 (exclusive), not {holdout:g}")
    if timeout <= 0:
        raise CampaignError("--trigger-timeout must be a positive number of seconds")
    if not 0 < threshold <= 1:
        raise CampaignError(f"--trigger-threshold must be above 0 and at most 1, not {threshold:g}")
    if descriptions and len(skill_dirs) > 1:
        raise CampaignError("--description tests one skill's candidates: give one SKILL_DIR")
    try:
        plans = [
            make_trigger_plan(
                Path(skill_dir),
                descriptions=list(descriptions),
                runs=runs,
                siblings=siblings,
                holdout=holdout,
                seed=seed,
            )
            for skill_dir in skill_dirs
        ]
    except PlanError as exc:
        raise CampaignError(str(exc)) from None
    if dry_run:
        lines = [
            line
            for p in plans
            for line in plan_lines(p, harness=options.harness, model=agent_model)
        ]
        return TriggerCampaignResult(
            plans=plans, dry_run_lines=[*lines, sandbox_line(sandboxed=options.sandbox)]
        )
    if (problem := options.problem_playing_here()) is not None:
        raise CampaignError(problem)
    if not options.sandbox:
        warn("runevals: --unsafe-no-sandbox: agents' commands run without the sandbox")
    harness = _harness(options.harness, timeout)
    client = anthropic_client()
    workspace = Path(out) if out is not None else Path(settings.EVALSITE_WORKSPACE_DIR)
    result = TriggerCampaignResult()
    for plan in plans:
        campaign = _Campaign(
            plan,
            harness=harness,
            client=client,
            settings=SessionSettings(model=agent_model, timeout=timeout, keep_env=options.keep_env),
            concurrency=options.concurrency,
            progress=progress,
        )
        try:
            with SkillLock(workspace / plan.skill.name), unsandboxed(not options.sandbox):
                folder = campaign.play(workspace / plan.skill.name)
        except LockHeld as exc:
            raise CampaignError(str(exc)) from None
        result.reports += _written(
            plan, folder, campaign.records, harness, agent_model, threshold=threshold
        )
    return result


def _harness(name: str, timeout: float) -> Harness:
    """The harness that plays each turn; one that cannot show a skill load is refused."""
    if (problem := registry.problem(name)) is not None:
        raise CampaignError(problem)
    kind = registry.harness_class(name)
    if not getattr(kind, "observes_skill_calls", True):
        raise CampaignError(
            f"--triggers cannot use --harness {name}: it has no skill tool, so whether a turn "
            "loaded the skill is not observable"
        )
    if "round_seconds" in inspect.signature(kind).parameters:
        # A CLI's turn is one sandboxed process: its wall time is the turn's limit.
        return kind(round_seconds=timeout)
    return kind()


class _Campaign:
    """Every session of one skill's plan, played in a pool of `concurrency` threads."""

    def __init__(
        self,
        plan: TriggerPlan,
        *,
        harness: Harness,
        client: MessagesClient,
        settings: SessionSettings,
        concurrency: int,
        progress: Progress | None,
    ):
        self.plan = plan
        self.harness = harness
        self.client = client
        self.settings = settings
        self.concurrency = concurrency
        self.progress = progress
        self.records: list[SessionRecord] = []
        self._lock = threading.Lock()

    def play(self, skill_folder: Path) -> Path:
        folder = _new_folder(skill_folder)
        template = folder / ".template"
        build_template(template, [], evals_dir=self.plan.skill_dir)
        sessions = [
            Session(d, q, r)
            for d in range(1, len(self.plan.descriptions) + 1)
            for q in range(1, len(self.plan.queries) + 1)
            for r in range(1, self.plan.runs + 1)
        ]
        try:
            with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
                futures = [pool.submit(self._one, s, folder, template) for s in sessions]
                for future in as_completed(futures):
                    record = future.result()
                    with self._lock:
                        self.records.append(record)
                        if self.progress:
                            self.progress(record, len(self.records), len(sessions))
        finally:
            shutil.rmtree(template, ignore_errors=True)
        return folder

    def _one(self, session: Session, folder: Path, template: Path) -> SessionRecord:
        return play_session(
            plan=self.plan,
            session=session,
            harness=self.harness,
            client=self.client,
            settings=self.settings,
            folder=folder,
            template=template,
        )


def _new_folder(skill_folder: Path) -> Path:
    """`triggers-<UTC time>/` under the skill's folder of the workspace, made now."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for attempt in range(1, 100):
        folder = skill_folder / (f"triggers-{stamp}" + (f"-{attempt}" if attempt > 1 else ""))
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            continue
    raise CampaignError(f"{skill_folder}: cannot make a triggers-{stamp} folder")


def _written(
    plan: TriggerPlan,
    folder: Path,
    records: list[SessionRecord],
    harness: Harness,
    model: str,
    *,
    threshold: float,
) -> list[DescriptionReport]:
    """Write each description's trigger-results.json and import its folder."""
    provenance = Provenance(
        # The messages harness records itself as evalsite-runevals; trigger results name it
        # by its --harness name, as they always have.
        harness=harness.name if harness.name in registry.HARNESSES else "messages",
        harness_version=harness.version,
        model=model,
        threshold=threshold,
        generated_at=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
    )
    reports = []
    for index, description in enumerate(plan.descriptions, 1):
        target = folder / f"description-{index}"
        target.mkdir(exist_ok=True)
        data = trigger_results(plan, index, records, provenance)
        write_json(target / RESULTS_FILE, data)
        try:
            imported = import_workspace([target]).summary()
        except ImportFailure as exc:
            raise CampaignError(f"import failed: {exc.message}") from None
        reports.append(
            DescriptionReport(
                plan.skill.name,
                f"description-{index} ({description.source})",
                target,
                data,
                imported,
            )
        )
    return reports
