"""skill-creator's benchmark.json and benchmark.md, as its aggregator writes them from the runs.

Computed from the generated runs, so that the importer's cross-check of the recorded figures
against the runs agrees and the bench measures clean data.
"""

from __future__ import annotations

import math
import random
from typing import Any

from bench.texts import AGENT_MODEL

CONFIGURATIONS = ("with_skill", "without_skill")
ANALYST_NOTES = (
    "Expectation '{text}' passes in both configurations: it does not tell the skill apart",
    "Eval {eval_id} has high variance with the skill ({spread}): possibly flaky",
    "Without the skill, runs consistently fail the expectations about field mapping",
    "The skill adds {seconds:.0f} s per run on average and moves the pass rate by {delta}",
)


def summary_of(expectations: list[dict[str, Any]]) -> dict[str, Any]:
    """The grader's summary; its pass rate rounded to two decimals, as agents write it."""
    passed = sum(e["passed"] for e in expectations)
    total = len(expectations)
    return {
        "passed": passed,
        "failed": total - passed,
        "total": total,
        "pass_rate": round(passed / total, 2) if total else 0.0,
    }


def benchmark_entry(
    eval_id: int,
    eval_name: str,
    configuration: str,
    run_number: int,
    grading: dict[str, Any],
    timing: dict[str, Any],
) -> dict[str, Any]:
    """A runs[] entry as skill-creator's aggregator builds it from grading.json.

    Where the grader left `summary` out, the aggregator would record 0 passed of 0; the
    entry counts the expectations instead, so that benchmark.json agrees with its runs and
    the importer's cross-check has nothing to warn about (the bench wants clean data).
    """
    summary = grading.get("summary") or summary_of(grading["expectations"])
    notes_summary = grading["user_notes_summary"]
    tokens = timing.get("total_tokens", 0)
    return {
        "eval_id": eval_id,
        "eval_name": eval_name,
        "configuration": configuration,
        "run_number": run_number,
        "result": {
            "pass_rate": summary["pass_rate"],
            "passed": summary["passed"],
            "failed": summary["failed"],
            "total": summary["total"],
            "time_seconds": grading["timing"]["total_duration_seconds"],
            "tokens": tokens or grading["execution_metrics"]["output_chars"],
            "tool_calls": grading["execution_metrics"]["total_tool_calls"],
            "errors": grading["execution_metrics"]["errors_encountered"],
        },
        "expectations": grading["expectations"],
        "notes": [
            *notes_summary["uncertainties"],
            *notes_summary["needs_review"],
            *notes_summary["workarounds"],
        ],
    }


def _stats(values: list[float]) -> dict[str, float]:
    """The aggregator's figures: mean, sample standard deviation, min, max (4 decimals)."""
    if not values:
        return {"mean": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}
    mean = sum(values) / len(values)
    variance = sum((x - mean) ** 2 for x in values) / (len(values) - 1) if len(values) > 1 else 0
    return {
        "mean": round(mean, 4),
        "stddev": round(math.sqrt(variance), 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def benchmark(
    entries: list[dict[str, Any]], *, skill: str, timestamp: str, runs: int, seed: int
) -> dict[str, Any]:
    """skill-creator's benchmark.json for the runs (entries ordered as the aggregator does)."""
    rng = random.Random(f"skill-creator/{seed}/benchmark")
    run_summary: dict[str, Any] = {}
    for configuration in CONFIGURATIONS:
        results = [e["result"] for e in entries if e["configuration"] == configuration]
        run_summary[configuration] = {
            key: _stats([r[key] for r in results]) for key in ("pass_rate", "time_seconds")
        }
        run_summary[configuration]["tokens"] = _stats([r["tokens"] for r in results])
    a, b = (run_summary[c] for c in CONFIGURATIONS)
    delta = {
        key: a[key]["mean"] - b[key]["mean"] for key in ("pass_rate", "time_seconds", "tokens")
    }
    run_summary["delta"] = {
        "pass_rate": f"{delta['pass_rate']:+.2f}",
        "time_seconds": f"{delta['time_seconds']:+.1f}",
        "tokens": f"{delta['tokens']:+.0f}",
    }
    sample = rng.choice(entries)
    notes = [
        ANALYST_NOTES[0].format(text=sample["expectations"][0]["text"]),
        ANALYST_NOTES[1].format(eval_id=sample["eval_id"], spread="50% ± 40%"),
        ANALYST_NOTES[2],
        ANALYST_NOTES[3].format(
            seconds=delta["time_seconds"], delta=run_summary["delta"]["pass_rate"]
        ),
    ]
    return {
        "metadata": {
            "skill_name": skill,
            "skill_path": f"/home/agent/skills/{skill}",
            "executor_model": AGENT_MODEL,
            "analyzer_model": "claude-opus-4-1-20250805",
            "timestamp": timestamp,
            "evals_run": sorted({e["eval_id"] for e in entries}),
            "runs_per_configuration": runs,
        },
        "runs": entries,
        "run_summary": run_summary,
        "notes": notes,
    }


def benchmark_markdown(doc: dict[str, Any]) -> str:
    """The short benchmark.md the aggregator writes beside benchmark.json."""
    summary = doc["run_summary"]
    a, b = (summary[c] for c in CONFIGURATIONS)
    lines = [
        f"# Skill Benchmark: {doc['metadata']['skill_name']}",
        "",
        f"**Model**: {doc['metadata']['executor_model']}",
        f"**Date**: {doc['metadata']['timestamp']}",
        f"**Evals**: {len(doc['metadata']['evals_run'])} "
        f"({doc['metadata']['runs_per_configuration']} runs each per configuration)",
        "",
        "| Metric | With Skill | Without Skill | Delta |",
        "|--------|------------|---------------|-------|",
        f"| Pass Rate | {a['pass_rate']['mean']:.0%} | {b['pass_rate']['mean']:.0%} "
        f"| {summary['delta']['pass_rate']} |",
        f"| Time | {a['time_seconds']['mean']:.1f}s | {b['time_seconds']['mean']:.1f}s "
        f"| {summary['delta']['time_seconds']}s |",
        f"| Tokens | {a['tokens']['mean']:.0f} | {b['tokens']['mean']:.0f} "
        f"| {summary['delta']['tokens']} |",
        "",
        "## Notes",
        "",
        *(f"- {note}" for note in doc["notes"]),
    ]
    return "\n".join(lines) + "\n"
