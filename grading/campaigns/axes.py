"""runevals across axes: `--harness a,b --model x,y` plays the same evals on each combination.

Each (harness, model) combination is its own campaign (`workflow.run_evals`) writing its own
iteration of every skill, in a stable order: harnesses as given, each with the models as given.
Everything that could stop a combination from running is checked for all of them before the
first plays (names, plans, prices, the API key, the sandbox, each harness's CLI); once they
play, one combination's failure does not stop the next, and the exit status is the worst.

- `--max-cost` / `--max-tokens`: one spending limit holds across the whole invocation; once
  it stops, the combinations after it start nothing (`--resume` plays the rest).
- `--resume`: the combinations run in order, so an interrupted invocation finished every
  combination before the first one with an unfinished iteration (of any of its skills): those
  are not played again; that one is finished and the ones after it played. With nothing
  unfinished, every combination runs, as `--resume` alone would.
- `--queue`: the queue holds one active iteration per skill, so each combination is queued
  once the one before it is imported: several combinations need `--wait`, and `--resume` there
  is refused (the queue's resume takes a skill's newest queued iteration, whichever it was).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from django.conf import settings

from grading.evaluating import registry
from grading.evaluating.folders import unfinished_iteration

from .options import REGRESSION, CampaignError, CampaignOptions
from .report import CampaignResult, budget_line
from .workflow import run_evals, spending_limit


@dataclass(frozen=True)
class Combination:
    harness: str
    model: str

    @property
    def label(self) -> str:
        return f"harness {self.harness}, model {self.model}"


def names_given(value: str, flag: str) -> list[str]:
    """The comma-separated names of `--flag`, stripped; empty or repeated ones refused."""
    names = [name.strip() for name in value.split(",")]
    if not all(names):
        raise CampaignError(f"{flag}: an empty name in {value!r}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise CampaignError(f"{flag}: {', '.join(repeated)} given more than once")
    return names


def combinations(harnesses: str, models: str) -> list[Combination]:
    """Every (harness, model) of `--harness` and `--model`, in the order given; CampaignError
    names an unknown harness (the registry's names, whatever harnesses it holds)."""
    known = registry.names()
    wanted = names_given(harnesses, "--harness")
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise CampaignError(
            f"--harness: unknown harness {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(known)})"
        )
    return [Combination(h, m) for h in wanted for m in names_given(models, "--model")]


@dataclass
class Played:
    """What one combination came to: its campaign's result, or why it could not run."""

    combination: Combination
    result: CampaignResult | None = None
    error: CampaignError | None = None
    #: --resume: finished before the interruption, not played again.
    skipped: bool = False

    def returncode(self, *, fail_on_regression: bool) -> int:
        if self.error is not None:
            return self.error.returncode
        if self.result is None:
            return 0
        try:
            self.result.check(fail_on_regression=fail_on_regression)
        except CampaignError as exc:
            return exc.returncode
        return 0

    def text(self) -> str:
        if self.skipped:
            return "finished before the interruption: not played again (--resume)"
        if self.error is not None:
            return f"could not run: {self.error}"
        if self.result is None:
            return ""
        shown = self.result.reports or self.result.plans or self.result.campaign is not None
        lines = [self.result.summary()] if shown else []
        if self.result.budget_stopped:
            lines.append(self.result.budget_stopped)
        return "\n".join(line for line in lines if line)

    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "harness": self.combination.harness,
            "model": self.combination.model,
        }
        if self.skipped:
            data["skipped"] = "finished before the interruption (--resume)"
        elif self.error is not None:
            data["error"] = str(self.error)
            data["exit_status"] = self.error.returncode
        elif self.result is not None:
            data["reports"] = self.result.reports
            if self.result.plans:
                data["plan"] = self.result.summary().splitlines()
            if self.result.campaign is not None:
                data["queued"] = json.loads(self.result.summary(as_json=True))
            if self.result.budget_stopped:
                data["budget_stopped"] = self.result.budget_stopped
        return data


@dataclass
class AxesResult:
    played: list[Played] = field(default_factory=list)

    @property
    def reports(self) -> list[dict[str, Any]]:
        return [r for p in self.played if p.result is not None for r in p.result.reports]

    def summary(self, *, as_json: bool = False) -> str:
        """A block per combination (its heading, then its campaign's summary); JSON: a list."""
        if as_json:
            return json.dumps([p.data() for p in self.played], indent=2)
        return "\n".join(f"[{p.combination.label}]\n{p.text()}".rstrip() for p in self.played)

    def check(self, *, fail_on_regression: bool) -> None:
        """CampaignError with the worst exit status of the combinations, naming those."""
        codes = [(p, p.returncode(fail_on_regression=fail_on_regression)) for p in self.played]
        worst = max((code for _, code in codes), default=0)
        if worst:
            failed = [p.combination for p, code in codes if code]
            named = "; ".join(f"{c.harness} × {c.model}" for c in failed)
            what = "could not run" if worst > REGRESSION else "did not pass"
            raise CampaignError(
                f"{len(failed)} of {len(codes)} combinations {what}: {named}", worst
            )


def _unheard(line: str) -> None:
    pass


def run_axes(
    *,
    skill_dirs: Sequence[Path],
    options: CampaignOptions,
    combos: list[Combination],
    dry_run: bool = False,
    queue: bool = False,
    wait_until_imported: bool = False,
    resume: bool = False,
    max_cost: float | None = None,
    max_tokens: int | None = None,
    tell: Callable[[str], None] = _unheard,
    **campaign: Any,
) -> AxesResult:
    """Check every combination, then run each in turn (`campaign`: run_evals' other keywords:
    judge_model, mode, runs, progress, warn…); CampaignError before any work when one
    cannot run."""
    if queue and not dry_run and not wait_until_imported:
        raise CampaignError(
            "--queue with several harnesses or models needs --wait: the queue holds one "
            "active iteration per skill, so each combination is queued after the one before"
        )
    if queue and resume:
        raise CampaignError(
            "--resume --queue takes one harness and one model: resume each combination alone"
        )
    spending = spending_limit(max_cost, max_tokens, queue=queue)
    checked = {
        combo: run_evals(
            skill_dirs=skill_dirs,
            options=replace(options, harness=combo.harness),
            agent_model=combo.model,
            dry_run=True,
            queue=queue,
            wait_until_imported=wait_until_imported,
            max_cost=max_cost,
            max_tokens=max_tokens,
            **campaign,
        )
        for combo in combos
    }
    if dry_run:
        return AxesResult([Played(combo, result) for combo, result in checked.items()])
    if not queue:
        for harness in dict.fromkeys(combo.harness for combo in combos):
            if (problem := replace(options, harness=harness).problem_playing_here()) is not None:
                raise CampaignError(problem)
    first = _first_unfinished(combos, checked) if resume else 0
    result = AxesResult()
    for index, combo in enumerate(combos):
        if index < first:
            result.played.append(Played(combo, skipped=True))
            continue
        played = Played(combo)
        if spending.stopped:
            # Said once, by the campaign it stopped; these start nothing, nothing to alert.
            skills = [plan.skill.name for plan in checked[combo].plans]
            stopped = CampaignResult(not_started=skills)
            stopped.budget_stopped = budget_line(spending.stopped, skills)
            played.result = stopped
            result.played.append(played)
            continue
        tell(f"Running {combo.label}")
        try:
            played.result = run_evals(
                skill_dirs=skill_dirs,
                options=replace(options, harness=combo.harness),
                agent_model=combo.model,
                queue=queue,
                wait_until_imported=wait_until_imported,
                resume=resume,
                spending=spending,
                **campaign,
            )
        except CampaignError as exc:
            played.error = exc
        result.played.append(played)
    return result


def _first_unfinished(combos: list[Combination], checked: dict[Combination, Any]) -> int:
    """The index of the first combination with an unfinished iteration of one of its skills
    (as conditions.json recorded its harness and model), 0 when there is none."""
    workspace = Path(settings.EVALSITE_WORKSPACE_DIR)
    skills = {plan.skill.name for result in checked.values() for plan in result.plans}
    # conditions.json names a harness as the harness calls itself (messages: evalsite-runevals).
    index = {
        (getattr(registry.harness_class(c.harness), "name", c.harness), c.model): i
        for i, c in enumerate(combos)
    }
    found = []
    for skill in sorted(skills):
        folder = unfinished_iteration(workspace / skill)
        if folder is None:
            continue
        recorded = json.loads((folder / "conditions.json").read_text(encoding="utf-8"))
        key = (str(recorded.get("harness")), str(recorded.get("agent_model")))
        if key in index:
            found.append(index[key])
    return min(found, default=0)
