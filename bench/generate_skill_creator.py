"""Generate a synthetic skill-creator workspace (SPEC §3.3) for the benchmarks.

`<root>/<skill>-workspace/iteration-1/` as skill-creator leaves it after a benchmark: per
eval `eval_metadata.json`, per run the grader's `grading.json`, `timing.json` and ~4 KB of
`outputs/`, then benchmark.json and benchmark.md (bench/skill_creator_benchmark.py). The
quirks the importer normalises come in realistic shares: ~5 % of gradings lack `summary`,
~1 % of timings are zeros. Each eval is seeded by its number, so the tree does not depend
on the number of worker processes.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from bench.skill_creator_benchmark import (
    CONFIGURATIONS,
    benchmark,
    benchmark_entry,
    benchmark_markdown,
    summary_of,
)
from bench.texts import IDENTS, TOOLS, WORDS, Pools, Texts, build_pools
from bench.writing import Counts, in_processes, write_file, write_json

SKILL = "pdf-form-filling"
TIMESTAMP = datetime(2026, 3, 2, 14, 30, tzinfo=UTC)
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
        doc["summary"] = summary_of(expectations)
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
    write_json(eval_dir / "eval_metadata.json", metadata, "other", counts)
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
            outputs["metrics.json"] = orjson.dumps(metrics, option=orjson.OPT_INDENT_2)
            grading = _grading(
                texts,
                spec,
                with_skill=configuration == "with_skill",
                metrics=metrics,
                timing=timing_for_grader,
            )
            for name, data in sorted(outputs.items()):
                write_file(run_dir / "outputs" / name, data, "outputs", counts)
            write_json(run_dir / "grading.json", grading, "grading", counts)
            write_json(run_dir / "timing.json", timing, "timing", counts)
            counts.runs += 1
            counts.assertion_results += len(grading["expectations"])
            entries.append(
                benchmark_entry(spec.eval_id, spec.name, configuration, k, grading, timing)
            )
    return counts, entries


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
        counts.merge(part)
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
    total = Counts(skills=1, iterations=1)
    by_eval: dict[int, list[dict[str, Any]]] = {}
    for counts, entries in in_processes(job, chunks, workers):
        total.merge(counts)
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
    stamp = TIMESTAMP.strftime("%Y-%m-%dT%H:%M:%SZ")
    doc = benchmark(ordered, skill=SKILL, timestamp=stamp, runs=runs, seed=seed)
    write_json(folder / "benchmark.json", doc, "benchmark", total)
    write_file(folder / "benchmark.md", benchmark_markdown(doc).encode(), "other", total)
    return total.summary()
