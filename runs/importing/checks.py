"""Validity warnings evalsite adds to an iteration as it imports it (SPEC §4.1)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from runs.models import Role, role_for_condition
from runs.stats import benchmark_disagreements, build_benchmark
from runs.stats.rows import RunSample
from runs.warnings import MAX_NAMED, ValidityWarning, merged, named

from .records import ParsedIteration, ParsedRun

#: Findings files and how one run's entry reads as a warning.
FINDING_FILES = {
    "stray-writes": "stray-writes.json",
    "guard-denials": "guard-denials.json",
    "permission-denials": "permission-denials.json",
}


def run_name(eval_id: str, condition: str, run_index: int | None, multi: bool) -> str:
    return f"{eval_id}/{condition}" + (f"/run-{run_index}" if multi and run_index else "")


def _names(runs: list[ParsedRun], multi: set[tuple[str, str]]) -> dict[str, Any]:
    """A warning's `runs` and `unnamed` parameters for these runs."""
    return named(
        [
            run_name(r.eval_id, r.condition, r.run_index, (r.eval_id, r.condition) in multi)
            for r in runs
        ]
    )


def validity_warnings(parsed: ParsedIteration) -> list[dict[str, Any]]:
    """The source's own warnings, then evalsite's, as stored, one per sentence."""
    # The source's warnings are another tool's sentences: read as text, never parsed back.
    recorded = list(parsed.validity_warnings)
    ours: list[ValidityWarning] = list(parsed.notices)
    cells = Counter((r.eval_id, r.condition) for r in parsed.runs)
    multi = {cell for cell, n in cells.items() if n > 1}

    by_eval: dict[str, dict[str, int]] = defaultdict(dict)
    for (eval_id, condition), n in cells.items():
        by_eval[eval_id][condition] = n
    for eval_id, counts in sorted(by_eval.items()):
        if len(set(counts.values())) > 1:
            ours.append(
                ValidityWarning("uneven-run-counts", {"eval_id": eval_id, "counts": counts})
            )

    errored = [r for r in parsed.runs if r.status == "errored"]
    if errored:
        ours.append(ValidityWarning("errored-runs", {"n": len(errored), **_names(errored, multi)}))
    ungraded = [r for r in parsed.runs if r.grading is None and r.status != "errored"]
    if ungraded:
        ours.append(ValidityWarning("no-grading", {"n": len(ungraded), **_names(ungraded, multi)}))

    empty = sorted({r.eval_id for r in parsed.runs if r.grading and r.grading.total == 0})
    if empty:
        ours.append(ValidityWarning("zero-assertions", {"evals": empty}))

    loading = {c.name for c in parsed.conditions if c.loads_skill}
    for condition in sorted(loading):
        verdicts = [
            r.grading.skill_invoked
            for r in parsed.runs
            if r.condition == condition
            and r.grading is not None
            and r.grading.skill_invoked is not None
            and _should_trigger(parsed, r.eval_id)
        ]
        # eval-magic writes its own invocation warning; evalsite's would say it again.
        already = any("invocation" in w and condition in w for w in recorded)
        if verdicts and not all(verdicts) and not already:
            params = {
                "condition": condition,
                "invoked": sum(verdicts),
                "runs": len(verdicts),
                "percent": 100 * sum(verdicts) / len(verdicts),
            }
            ours.append(ValidityWarning("diluted-invocation", params))

    ours.extend(_assertion_set_warnings(parsed))
    ours.extend(_finding_warnings(parsed, recorded))
    ours.extend(_benchmark_cross_check(parsed))
    ours.extend(_skill_creator_cross_check(parsed))
    return merged(map(ValidityWarning.recorded, recorded), ours)


def _assertion_set_warnings(parsed: ParsedIteration) -> list[ValidityWarning]:
    """Arms graded on different assertions are not compared like for like."""
    graded: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for run in parsed.runs:
        if run.grading is not None:
            graded[run.eval_id][run.condition] |= {
                r.assertion_id for r in run.grading.results if not r.is_meta
            }
    warnings = []
    for eval_id, by_condition in sorted(graded.items()):
        sets = list(by_condition.items())
        if len(sets) < 2 or all(ids == sets[0][1] for _, ids in sets[1:]):
            continue
        assertions = {condition: sorted(ids) for condition, ids in sets}
        warnings.append(
            ValidityWarning("assertion-sets-differ", {"eval_id": eval_id, "assertions": assertions})
        )
    return warnings


def _should_trigger(parsed: ParsedIteration, eval_id: str) -> bool:
    definition = parsed.evals.get(eval_id)
    return definition is None or definition.skill_should_trigger


def _finding_warnings(parsed: ParsedIteration, recorded: list[str]) -> list[ValidityWarning]:
    warnings = []
    for kind, filename in FINDING_FILES.items():
        report = parsed.findings.get(kind)
        if not report or any(filename in w for w in recorded):
            continue  # the source already warned about this file
        key = "runs" if kind == "stray-writes" else "tasks"
        for entry in report.get(key) or []:
            where = run_name(
                entry["eval_id"], entry["condition"], entry.get("run_index"), multi=True
            )
            if kind == "stray-writes":
                count = len(entry.get("violations") or [])
                if count:
                    params = {"run": where, "count": count, "file": filename}
                    warnings.append(ValidityWarning("stray-writes", params))
            elif kind == "guard-denials":
                params = {"run": where, "count": entry["denial_count"], "file": filename}
                warnings.append(ValidityWarning("guard-denials", params))
            else:
                refused = entry["denial_count"] - entry.get("guard_attributed_count", 0)
                if refused > 0:
                    params = {"run": where, "count": refused, "file": filename}
                    warnings.append(ValidityWarning("harness-refusals", params))
    return warnings


def recomputed_benchmark(parsed: ParsedIteration, recorded: dict[str, Any]) -> dict[str, Any]:
    """SPEC §4.1 figures recomputed from the iteration's runs, in the recorded order."""
    samples = [
        RunSample(
            eval_id=r.eval_id,
            condition=r.condition,
            run_index=r.run_index,
            pass_rate=r.grading.pass_rate if r.grading and r.status != "errored" else None,
            duration_ms=r.duration_ms,
            total_tokens=r.total_tokens,
            skill_invoked=r.grading.skill_invoked if r.grading else None,
        )
        for r in parsed.runs
    ]
    return build_benchmark(
        samples,
        mode=parsed.mode,
        conditions_compared=recorded["conditions_compared"],
        skill_conditions={c.name for c in parsed.conditions if c.loads_skill},
        generated=recorded.get("generated", ""),
        baseline=recorded.get("baseline"),
    )


def _benchmark_cross_check(parsed: ParsedIteration) -> list[ValidityWarning]:
    recorded = parsed.recorded_benchmark
    if not recorded or "conditions_compared" not in recorded:
        return []  # only eval-magic benchmarks carry figures to check
    names = {c.name for c in parsed.conditions}
    if not set(recorded["conditions_compared"]) <= names:
        conditions = list(recorded["conditions_compared"])
        return [ValidityWarning("benchmark-conditions-missing", {"conditions": conditions})]
    has_timing = any(r.duration_ms is not None or r.total_tokens is not None for r in parsed.runs)
    problems = benchmark_disagreements(
        recomputed_benchmark(parsed, recorded), recorded, include_timing=has_timing
    )
    if not problems:
        return []
    unnamed = max(0, len(problems) - MAX_NAMED)
    params = {"problems": problems[:MAX_NAMED], "unnamed": unnamed}
    return [ValidityWarning("benchmark-disagrees", params)]


#: skill-creator writes means rounded to a few decimals, often by hand: within this, agree.
SKILL_CREATOR_TOLERANCE = 0.006


def _number(value: Any) -> float | None:
    """A recorded figure: a number, or a signed string like "+0.50"."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _skill_creator_cross_check(parsed: ParsedIteration) -> list[ValidityWarning]:
    """Compare a skill-creator benchmark.json's run_summary and delta with the runs.

    skill-creator's aggregator subtracts configurations in alphabetical folder order, so
    its delta is `old_skill - with_skill` in revision mode: evalsite always shows
    treatment - control, and says so when the recorded sign is the other way round.
    """
    recorded = parsed.recorded_benchmark
    if not recorded or "conditions_compared" in recorded:
        return []
    summary = recorded.get("run_summary")
    if not isinstance(summary, dict):
        return []
    rates: dict[str, list[float]] = defaultdict(list)
    for run in parsed.runs:
        if run.grading is not None and run.status != "errored":
            rates[run.condition].append(run.grading.pass_rate)
    means = {c: sum(v) / len(v) for c, v in rates.items() if v}
    warnings = []
    for condition, stats in sorted(summary.items()):
        if condition == "delta" or not isinstance(stats, dict) or condition not in means:
            continue
        pass_rate = stats.get("pass_rate")
        mean = _number(pass_rate.get("mean") if isinstance(pass_rate, dict) else pass_rate)
        if mean is not None and abs(mean - means[condition]) > SKILL_CREATOR_TOLERANCE:
            params = {"condition": condition, "recorded": mean, "ours": means[condition]}
            warnings.append(ValidityWarning("skill-creator-mean", params))
    delta = summary.get("delta")
    recorded_delta = _number(delta.get("pass_rate") if isinstance(delta, dict) else None)
    treatment = [c for c in means if role_for_condition(c) == Role.TREATMENT]
    control = [c for c in means if role_for_condition(c) == Role.CONTROL]
    if recorded_delta is None or len(treatment) != 1 or len(control) != 1:
        return warnings
    ours = means[treatment[0]] - means[control[0]]
    first, second = sorted([treatment[0], control[0]])
    if abs(recorded_delta - ours) <= SKILL_CREATOR_TOLERANCE:
        return warnings
    params = {
        "recorded": recorded_delta,
        "treatment": treatment[0],
        "control": control[0],
        "ours": ours,
    }
    if abs(recorded_delta + ours) <= SKILL_CREATOR_TOLERANCE:
        params |= {"first": first, "second": second}
        warnings.append(ValidityWarning("skill-creator-delta-order", params))
    else:
        warnings.append(ValidityWarning("skill-creator-delta", params))
    return warnings
