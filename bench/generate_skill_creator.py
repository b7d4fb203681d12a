"""Generate a synthetic skill-creator workspace (SPEC §3.3) for import benchmarks.

    python -m bench.generate OUT_DIR --layout skill-creator [--evals 300 --runs 10
                                                             --assertions 6 --seed 0]

Writes `<OUT_DIR>/<skill>-workspace/iteration-1/` as skill-creator leaves it after a
benchmark: `eval-<n>/eval_metadata.json` ({eval_id, eval_name, prompt, assertions}), per run
`eval-<n>/<with_skill|without_skill>/run-<k>/` with the grader's `grading.json`
(expectations with evidence, summary, execution_metrics, timing, claims,
user_notes_summary, sometimes eval_feedback), `timing.json` (tokens and durations from the
task notification) and `outputs/` (~4 KB: a Markdown summary, usually a diff, the executor's
metrics.json), then `benchmark.json` and `benchmark.md` as skill-creator's aggregator writes
them (runs[] with each run's expectations, run_summary with mean/stddev/min/max, delta
strings, the analyzer's notes).

The quirks the importer normalises are there in realistic proportions: ~5 % of gradings have
no `summary` (the grader is an agent), ~1 % of timings are zeros (nothing recorded). Every
eval is a function of the seed and its number, so the tree does not depend on the number of
worker processes.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import random
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from bench.generate import AGENT_MODEL, IDENTS, TOOLS, WORDS, Counts, Pools, Texts, build_pools

SKILL = "pdf-form-filling"
CONFIGURATIONS = ("with_skill", "without_skill")
TIMESTAMP = datetime(2026, 3, 2, 14, 30, tzinfo=UTC)
DUMP = orjson.OPT_INDENT_2
#: A share of gradings the grader agent wrote without `summary`, and of timings recorded as 0.
NO_SUMMARY = 0.05
ZERO_TIMING = 0.01

#: Which schema in schemas/ each generated JSON file must satisfy (outputs/ are not results).
SCHEMA_FOR = {
    "benchmark.json": "skill-creator-benchmark.schema.json",
    "eval_metadata.json": "skill-creator-eval-metadata.schema.json",
    "grading.json": "skill-creator-grading.schema.json",
    "timing.json": "timing.schema.json",
}

#: Expectation templates: what a skill author writes as a verifiable statement.
EXPECTATIONS = (
    "The agent runs `{cmd}` before editing any file under `{path}`",
    "The final answer names the root cause in `{ident}` and quotes the failing line",
    "The output file `outputs/{file}` exists and has a '{section}' section",
    "Only files under `src/{ident}/` change; the diff touches no unrelated module",
    "The summary states how many tests passed and how many failed after the change",
    "The agent asks before running `{destructive}` on the user's working tree",
    "Every field of the form is filled from `{file}`, with no placeholder text left",
    "The response explains why `{ident}` was chosen over `{other}`, in two sentences or fewer",
    "A regression test for `{ident}` is added and fails before the fix is applied",
    "The agent reads `{path}` before proposing changes to `{other}`",
    "The report lists each of the {n} input files with its page count",
    "No network access is attempted; `{cmd}` is not run",
    "The generated `{file}` opens without errors and keeps the original metadata",
    "The answer flags the ambiguous requirement about `{ident}` instead of guessing",
    "Dates in the output use ISO 8601 (YYYY-MM-DD), including the one in `{section}`",
    "The script in `outputs/` is idempotent: running it twice leaves `{file}` unchanged",
)
COMMANDS = ("pytest -x -q", "git status --short", "pdftk form.pdf dump_data_fields", "make lint")
DESTRUCTIVE = ("git reset --hard", "rm -rf build/", "git clean -fdx", "git push --force")
FILES = ("filled_form.pdf", "report.md", "field_values.json", "summary.md", "invoice.csv")
SECTIONS = ("Summary", "Findings", "Next steps", "Assumptions", "Fields")
ANALYST_NOTES = (
    "Expectation '{text}' passes in both configurations: it does not tell the skill apart",
    "Eval {eval_id} has high variance with the skill ({spread}): possibly flaky",
    "Without the skill, runs consistently fail the expectations about field mapping",
    "The skill adds {seconds:.0f} s per run on average and moves the pass rate by {delta}",
)


@dataclass(frozen=True)
class SkillCreatorEval:
    eval_id: int
    name: str
    prompt: str
    expectations: tuple[str, ...]
    #: How hard each expectation is: the chance a run without the skill passes it.
    difficulty: tuple[float, ...]


def expectation_text(rng: random.Random, template: str) -> str:
    """One expectation, 60–120 characters, from a template and the project's identifiers."""
    a, b = rng.sample(IDENTS, 2)
    text = template.format(
        cmd=rng.choice(COMMANDS),
        path=f"src/{a}/{b}.py",
        ident=a,
        other=b,
        file=rng.choice(FILES),
        section=rng.choice(SECTIONS),
        destructive=rng.choice(DESTRUCTIVE),
        n=rng.randint(2, 12),
    )
    while len(text) < 60:
        text += f" (see `{rng.choice(IDENTS)}`)"
    return text[:120]


def eval_spec(number: int, *, assertions: int, texts: Texts) -> SkillCreatorEval:
    rng = texts.rng
    name = "-".join(rng.choice(WORDS) for _ in range(3)) + f"-{number}"
    templates = rng.sample(EXPECTATIONS, min(assertions, len(EXPECTATIONS)))
    templates += [rng.choice(EXPECTATIONS) for _ in range(len(templates), assertions)]
    expectations = []
    for template in templates:
        text = expectation_text(rng, template)
        while text in expectations:  # two identical texts would share a slug
            text = expectation_text(rng, template)
        expectations.append(text)
    return SkillCreatorEval(
        eval_id=number,
        name=name,
        prompt=f"Fill in `forms/{name}.pdf` from the attached data. " + texts.prose(200, 550),
        expectations=tuple(expectations),
        difficulty=tuple(round(rng.uniform(0.15, 0.8), 2) for _ in expectations),
    )


def _evidence(texts: Texts, passed: bool, expectation: str) -> str:
    """What the grader cites: a transcript step or output for a pass, the gap for a fail."""
    rng = texts.rng
    if passed:
        head = f'Found in transcript step {rng.randint(1, 30)}: "{texts.prose(40, 90)}" '
    else:
        head = f"Not met ({expectation[:40].rstrip()}...): "
    return (head + texts.prose(60, 200))[: rng.randint(100, 300)]


def _outputs(texts: Texts, spec: SkillCreatorEval) -> dict[str, bytes]:
    """The run's outputs/ folder but metrics.json: ~3.5 KB, as an executor leaves it."""
    rng = texts.rng
    files = {
        "summary.md": (
            f"# {spec.name}\n\n## Summary\n\n{texts.prose(1800, 2800)}\n\n"
            f"## Next steps\n\n- {texts.prose(60, 160)}\n- {texts.prose(60, 160)}\n"
        ).encode()
    }
    if rng.random() < 0.75:
        lines = texts.code(1000, 1800).splitlines()
        diff = "\n".join(("+" if i % 3 else "-") + line for i, line in enumerate(lines))
        path = texts.path()
        files["changes.diff"] = f"--- a/{path}\n+++ b/{path}\n@@ -1,12 +1,14 @@\n{diff}\n".encode()
    return files


def _grading(
    texts: Texts,
    spec: SkillCreatorEval,
    *,
    with_skill: bool,
    metrics: dict[str, Any],
    timing: dict[str, Any],
) -> dict[str, Any]:
    rng = texts.rng
    lift = 0.3 if with_skill else 0.0
    expectations = []
    for text, difficulty in zip(spec.expectations, spec.difficulty, strict=True):
        passed = rng.random() < min(difficulty + lift, 0.97)
        expectations.append(
            {"text": text, "passed": passed, "evidence": _evidence(texts, passed, text)}
        )
    doc: dict[str, Any] = {"expectations": expectations}
    if rng.random() >= NO_SUMMARY:
        doc["summary"] = _summary(expectations)
    doc["execution_metrics"] = {
        k: metrics[k]
        for k in (
            "tool_calls",
            "total_tool_calls",
            "total_steps",
            "errors_encountered",
            "output_chars",
            "transcript_chars",
        )
    }
    doc["timing"] = {
        "executor_duration_seconds": timing["executor_duration_seconds"],
        "grader_duration_seconds": timing["grader_duration_seconds"],
        "total_duration_seconds": timing["total_duration_seconds"],
    }
    doc["claims"] = [
        {
            "claim": texts.prose(40, 120),
            "type": rng.choice(("factual", "process", "quality")),
            "verified": rng.random() < 0.8,
            "evidence": texts.prose(50, 160),
        }
        for _ in range(rng.randint(0, 3))
    ]
    doc["user_notes_summary"] = {
        "uncertainties": [texts.prose(40, 140) for _ in range(rng.randint(0, 2))],
        "needs_review": [texts.prose(40, 140) for _ in range(rng.randint(0, 1))],
        "workarounds": [texts.prose(40, 140) for _ in range(rng.randint(0, 1))],
    }
    if rng.random() < 0.1:
        doc["eval_feedback"] = {
            "suggestions": [
                {"assertion": spec.expectations[0], "reason": texts.prose(60, 160)},
            ],
            "overall": texts.prose(40, 120),
        }
    return doc


def _summary(expectations: list[dict[str, Any]]) -> dict[str, Any]:
    """The grader's summary; its pass rate rounded to two decimals, as agents write it."""
    passed = sum(e["passed"] for e in expectations)
    total = len(expectations)
    return {
        "passed": passed,
        "failed": total - passed,
        "total": total,
        "pass_rate": round(passed / total, 2) if total else 0.0,
    }


def _timing(rng: random.Random, start: datetime, *, with_skill: bool) -> dict[str, Any]:
    if rng.random() < ZERO_TIMING:
        return {"total_tokens": 0, "duration_ms": 0, "total_duration_seconds": 0.0}
    # Reading the skill and following its steps costs time and tokens.
    slower = 1.2 if with_skill else 1.0
    executor = round(rng.uniform(20, 240) * slower, 1)
    grader = round(rng.uniform(8, 40), 1)
    executor_end = start + timedelta(seconds=executor)
    grader_start = executor_end + timedelta(seconds=1)

    def stamp(moment: datetime) -> str:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    return {
        "total_tokens": round(rng.randint(6000, 90000) * slower),
        "duration_ms": round(executor * 1000) + rng.randint(0, 999),
        "total_duration_seconds": round(executor + grader, 1),
        "executor_start": stamp(start),
        "executor_end": stamp(executor_end),
        "executor_duration_seconds": executor,
        "grader_start": stamp(grader_start),
        "grader_end": stamp(grader_start + timedelta(seconds=grader)),
        "grader_duration_seconds": grader,
    }


def _write(path: Path, data: bytes, kind: str, counts: Counts) -> None:
    path.write_bytes(data)
    counts.add_file(kind, len(data))


def write_eval(
    folder: Path, number: int, *, runs: int, assertions: int, pools: Pools, seed: int
) -> tuple[Counts, list[dict[str, Any]]]:
    """One eval's folder; its counts and the aggregator's runs[] entries, by configuration."""
    rng = random.Random(f"skill-creator/{seed}/eval/{number}")
    texts = Texts(pools, rng)
    spec = eval_spec(number, assertions=assertions, texts=texts)
    counts = Counts()
    eval_dir = folder / f"eval-{number}"
    eval_dir.mkdir(parents=True)
    metadata = {
        "eval_id": spec.eval_id,
        "eval_name": spec.name,
        "prompt": spec.prompt,
        "assertions": list(spec.expectations),
    }
    _write(eval_dir / "eval_metadata.json", orjson.dumps(metadata, option=DUMP), "other", counts)
    entries = []
    for configuration in CONFIGURATIONS:
        for k in range(1, runs + 1):
            run_dir = eval_dir / configuration / f"run-{k}"
            (run_dir / "outputs").mkdir(parents=True)
            start = TIMESTAMP - timedelta(hours=3) + timedelta(seconds=rng.randint(0, 9000))
            timing = _timing(rng, start, with_skill=configuration == "with_skill")
            if "executor_duration_seconds" not in timing:  # nothing recorded
                timing_for_grader = {
                    "executor_duration_seconds": 0.0,
                    "grader_duration_seconds": 0.0,
                    "total_duration_seconds": 0.0,
                }
            else:
                timing_for_grader = timing
            tool_calls = {name: 0 for name in sorted(set(TOOLS))}
            for name in rng.choices(TOOLS, k=rng.randint(4, 40)):
                tool_calls[name] += 1
            metrics: dict[str, Any] = {
                "tool_calls": tool_calls,
                "total_tool_calls": sum(tool_calls.values()),
                "total_steps": rng.randint(3, 12),
                "files_created": [],
                "errors_encountered": rng.choices((0, 1, 2), weights=(85, 10, 5))[0],
                "output_chars": 0,
                "transcript_chars": rng.randint(2000, 40000),
            }
            outputs = _outputs(texts, spec)
            metrics["files_created"] = sorted(outputs)
            metrics["output_chars"] = sum(len(v) for v in outputs.values())
            outputs["metrics.json"] = orjson.dumps(metrics, option=DUMP)
            grading = _grading(
                texts,
                spec,
                with_skill=configuration == "with_skill",
                metrics=metrics,
                timing=timing_for_grader,
            )
            for name, data in sorted(outputs.items()):
                _write(run_dir / "outputs" / name, data, "outputs", counts)
            _write(run_dir / "grading.json", orjson.dumps(grading, option=DUMP), "grading", counts)
            _write(run_dir / "timing.json", orjson.dumps(timing, option=DUMP), "timing", counts)
            counts.runs += 1
            counts.assertion_results += len(grading["expectations"])
            entries.append(_benchmark_entry(spec, configuration, k, grading, timing))
    return counts, entries


def _benchmark_entry(
    spec: SkillCreatorEval,
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
    summary = grading.get("summary") or _summary(grading["expectations"])
    notes_summary = grading["user_notes_summary"]
    tokens = timing.get("total_tokens", 0)
    return {
        "eval_id": spec.eval_id,
        "eval_name": spec.name,
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


def benchmark(entries: list[dict[str, Any]], *, runs: int, seed: int) -> dict[str, Any]:
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
            "skill_name": SKILL,
            "skill_path": f"/home/agent/skills/{SKILL}",
            "executor_model": AGENT_MODEL,
            "analyzer_model": "claude-opus-4-1-20250805",
            "timestamp": TIMESTAMP.strftime("%Y-%m-%dT%H:%M:%SZ"),
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


def _write_evals(
    folder: Path, numbers: list[int], *, runs: int, assertions: int, seed: int
) -> tuple[Counts, dict[int, list[dict[str, Any]]]]:
    """Write some evals (a unit of work for a worker process)."""
    pools = build_pools(seed)
    counts = Counts()
    entries: dict[int, list[dict[str, Any]]] = {}
    for number in numbers:
        part, entries[number] = write_eval(
            folder, number, runs=runs, assertions=assertions, pools=pools, seed=seed
        )
        counts.runs += part.runs
        counts.assertion_results += part.assertion_results
        counts.files += part.files
        counts.bytes += part.bytes
        for kind, size in part.by_kind.items():
            counts.by_kind[kind] = counts.by_kind.get(kind, 0) + size
    return counts, entries


def generate_skill_creator_workspace(
    root: Path,
    *,
    evals: int = 300,
    runs: int = 10,
    assertions: int = 6,
    seed: int = 0,
    workers: int | None = None,
) -> dict[str, Any]:
    """Write `<root>/<skill>-workspace/iteration-1/`; return what was written."""
    folder = Path(root) / f"{SKILL}-workspace" / "iteration-1"
    folder.mkdir(parents=True)
    workers = max(1, min(workers or os.cpu_count() or 1, evals))
    chunks = [list(range(i, evals, workers)) for i in range(workers)]
    job = partial(_write_evals, folder, runs=runs, assertions=assertions, seed=seed)
    if workers > 1:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            parts = list(pool.map(job, chunks))
    else:
        parts = [job(chunk) for chunk in chunks]
    total = Counts(skills=1, iterations=1)
    by_eval: dict[int, list[dict[str, Any]]] = {}
    for counts, entries in parts:
        total.runs += counts.runs
        total.assertion_results += counts.assertion_results
        total.files += counts.files
        total.bytes += counts.bytes
        for kind, size in counts.by_kind.items():
            total.by_kind[kind] = total.by_kind.get(kind, 0) + size
        by_eval.update(entries)
    # The aggregator walks sorted(glob("eval-*")), so eval-10 comes before eval-2.
    order = sorted(by_eval, key=lambda n: f"eval-{n}")
    ordered = [
        entry
        for configuration in CONFIGURATIONS
        for number in order
        for entry in by_eval[number]
        if entry["configuration"] == configuration
    ]
    doc = benchmark(ordered, runs=runs, seed=seed)
    _write(folder / "benchmark.json", orjson.dumps(doc, option=DUMP), "benchmark", total)
    _write(folder / "benchmark.md", benchmark_markdown(doc).encode(), "other", total)
    return {
        "skills": total.skills,
        "iterations": total.iterations,
        "runs": total.runs,
        "assertion_results": total.assertion_results,
        "meta_results": 0,
        "files": total.files,
        "bytes": total.bytes,
        "bytes_by_kind": dict(sorted(total.by_kind.items())),
    }
