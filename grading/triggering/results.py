"""trigger-results.json: skill-creator's run_eval shape, with what evalsite measured besides.

Per query: `triggers` of `runs` loaded the skill under test, where `runs` counts finished
runs only; a run that timed out or failed is in `errors`, neither a trigger nor a miss.
`pass` is run_eval's rule (a rate ≥ threshold for a should-trigger query, below it
otherwise); a query none of whose runs finished has no rate and does not pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grading.evaluating.skillcalls import LOADED, NONE, OTHER
from runs.stats.triggers import DEFAULT_THRESHOLD, QueryOutcome, TriggerSummary, summarise

from .plan import TriggerPlan
from .play import SessionRecord

RESULTS_FILE = "trigger-results.json"
FINISHED = (LOADED, OTHER, NONE)


@dataclass(frozen=True)
class Provenance:
    """The `evalsite` block: how the results were measured."""

    harness: str
    harness_version: str
    model: str
    generated_at: str
    threshold: float = DEFAULT_THRESHOLD

    def as_json(self, plan: TriggerPlan) -> dict[str, Any]:
        return {
            "harness": self.harness,
            "harness_version": self.harness_version,
            "model": self.model,
            "runs_per_query": plan.runs,
            "threshold": self.threshold,
            "siblings": [s.name for s in plan.siblings],
            "holdout": plan.holdout,
            "seed": plan.seed,
            "generated_at": self.generated_at,
        }


def query_result(
    plan: TriggerPlan, index: int, records: Sequence[SessionRecord], *, threshold: float
) -> dict[str, Any]:
    """One query's row, from its runs' records (in run order)."""
    query = plan.queries[index - 1]
    finished = [r for r in records if r.outcome in FINISHED]
    triggers = sum(1 for r in finished if r.outcome == LOADED)
    rate = triggers / len(finished) if finished else None
    if rate is None:
        passed = False
    else:
        passed = rate >= threshold if query.should_trigger else rate < threshold
    loaded = Counter(r.loaded_skill if r.outcome != NONE else NONE for r in finished)
    row: dict[str, Any] = {
        "query": query.query,
        "should_trigger": query.should_trigger,
        "trigger_rate": round(rate, 4) if rate is not None else None,
        "triggers": triggers,
        "runs": len(finished),
        "pass": passed,
        "split": query.split,
    }
    if plan.siblings:
        row["expected"] = query.expected
    row.update(
        errors=len(records) - len(finished),
        loaded=dict(sorted(loaded.items())),
        run_records=[r.as_json() for r in sorted(records, key=lambda r: r.session.run)],
    )
    return row


def trigger_results(
    plan: TriggerPlan,
    description: int,
    records: Sequence[SessionRecord],
    provenance: Provenance,
) -> dict[str, Any]:
    """The whole file for description `description` (from 1) of `plan`."""
    by_query: dict[int, list[SessionRecord]] = {}
    for record in records:
        if record.session.description == description:
            by_query.setdefault(record.session.query, []).append(record)
    results = [
        query_result(plan, i, by_query.get(i, []), threshold=provenance.threshold)
        for i in range(1, len(plan.queries) + 1)
    ]
    passed = sum(1 for row in results if row["pass"])
    return {
        "skill_name": plan.skill.name,
        "description": plan.descriptions[description - 1].text,
        "results": results,
        "summary": {"total": len(results), "passed": passed, "failed": len(results) - passed},
        "evalsite": provenance.as_json(plan),
    }


def figures(data: dict[str, Any]) -> TriggerSummary:
    """The site's figures (recall, false-trigger rate…) of a trigger-results.json."""
    outcomes = [
        QueryOutcome(
            row["query"],
            row["should_trigger"],
            triggers=row["triggers"],
            runs=row["runs"],
            errors=row["errors"],
        )
        for row in data["results"]
    ]
    return summarise(outcomes, threshold=data["evalsite"]["threshold"])


def summary_line(data: dict[str, Any], *, label: str, imported: str) -> str:
    """One line for a description: recall, false triggers, passed/total, errors, import."""
    found = figures(data)
    runs = sum(row["runs"] for row in data["results"])
    errors = sum(row["errors"] for row in data["results"])
    timeouts = sum(
        1 for row in data["results"] for r in row["run_records"] if r["outcome"] == "timeout"
    )

    def shown(value: Any) -> str:
        return f"{value.value:.0%}" if value is not None else "–"

    return (
        f"{data['skill_name']} {label}: recall {shown(found.recall)}, "
        f"false triggers {shown(found.false_trigger_rate)}, "
        f"{data['summary']['passed']}/{data['summary']['total']} queries passed; "
        f"{runs} runs finished, {errors} not ({timeouts} timed out, {errors - timeouts} "
        f"errored); {imported}"
    )
