"""Generate a synthetic eval-magic workspace root (SPEC §3.1) for the benchmarks.

    python -m bench.generate OUT_DIR [--skills 5 --iterations 20 --evals 30 --runs 3 ...]
    python -m bench.generate OUT_DIR --layout skill-creator [--evals 300 --runs 10 ...]

`<root>/<skill>/iteration-<n>/` with conditions.json, benchmark.json, skill-snapshot.md and
`eval-<id>/<condition>/run-<k>/` (grading.json, run.json, conversation.json, timing.json),
every file valid against `schemas/`; byte-identical for a seed whatever the number of
workers. `--layout skill-creator` writes bench/generate_skill_creator.py's tree instead.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from bench.eval_magic_runs import EvalSpec, conversation, eval_specs, grading
from bench.generate_skill_creator import SCHEMA_FOR as SKILL_CREATOR_SCHEMA_FOR
from bench.generate_skill_creator import generate_skill_creator_workspace
from bench.texts import AGENT_MODEL, Pools, Texts, build_pools
from bench.tree_checks import validate_sample
from bench.writing import Counts, in_processes, write_file, write_json

CONDITIONS = ("with_skill", "without_skill")
HARNESS = "claude-code"
JUDGE_MODEL = "claude-opus-4-1-20250805"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SKILL_NAMES = (
    "working-in-isolation",
    "test-driven-development",
    "systematic-debugging",
    "writing-plans",
    "verification-before-completion",
    "receiving-code-review",
    "brainstorming",
    "dispatching-subagents",
)

#: Which schema in schemas/ each generated JSON file must satisfy.
SCHEMA_FOR = {
    "conditions.json": "conditions.schema.json",
    "benchmark.json": "benchmark.schema.json",
    "grading.json": "grading.schema.json",
    "run.json": "run-record.schema.json",
    "conversation.json": "conversation.schema.json",
    "timing.json": "timing.schema.json",
}


def skill_names(n: int) -> list[str]:
    names = list(SKILL_NAMES[:n])
    names += [f"synthetic-skill-{i:02d}" for i in range(len(names), n)]
    return names


#: eval-magic's decimals per metric; it is TypeScript, so rounding is Math.round's.
DECIMALS = {"pass_rate": 3, "duration_ms": 0, "total_tokens": 0}


def _js_round(value: float, decimals: int) -> int | float:
    """Math.round(value * 10**decimals) / 10**decimals, as JSON.stringify would print it."""
    scaled = value * 10**decimals
    whole = math.floor(scaled)
    rounded = (whole + 1 if scaled - whole >= 0.5 else whole) / 10**decimals + 0.0
    return int(rounded) if rounded.is_integer() else rounded


def _stats(values: list[float], decimals: int) -> dict[str, Any]:
    """eval-magic's {mean, stddev, n}: rounded mean and population standard deviation."""
    n = len(values)
    if n == 0:
        return {"mean": 0, "stddev": 0, "n": 0}
    mean = math.fsum(values) / n
    stddev = math.sqrt(math.fsum((x - mean) ** 2 for x in values) / n) if n >= 2 else 0.0
    return {"mean": _js_round(mean, decimals), "stddev": _js_round(stddev, decimals), "n": n}


def _conditions(skill: str, number: int, runs: int, timestamp: datetime) -> dict[str, Any]:
    """conditions.json: new-skill mode, with and without the skill."""
    return {
        "mode": "new-skill",
        "baseline": None,
        "conditions": [
            {"name": "with_skill", "skill_path": _skill_path(skill), "staged_skill_slug": skill},
            {"name": "without_skill", "skill_path": None, "staged_skill_slug": None},
        ],
        "timestamp": timestamp.isoformat().replace("+00:00", "Z"),
        "harness": HARNESS,
        "runs": runs,
        "agent_model": AGENT_MODEL,
        "judge_model": JUDGE_MODEL,
        "responder_model": None,
        "label": f"{skill} iteration {number}",
    }


def _skill_path(skill: str) -> str:
    return f"/home/agent/skills/{skill}/SKILL.md"


class _Tally:
    """What benchmark.json sums over an iteration's runs, per condition and assertion."""

    def __init__(self) -> None:
        self.per_condition: dict[str, dict[str, list[float]]] = {
            c: {"pass_rate": [], "duration_ms": [], "total_tokens": [], "invoked": []}
            for c in CONDITIONS
        }
        self.assertions: dict[str, dict[str, dict[str, dict[str, int]]]] = {}

    def add(self, eval_id: str, condition: str, grade: dict[str, Any], timing: dict) -> None:
        stats = self.per_condition[condition]
        stats["pass_rate"].append(grade["summary"]["pass_rate"])
        stats["duration_ms"].append(timing["duration_ms"])
        stats["total_tokens"].append(timing["total_tokens"])
        if "meta_summary" in grade:
            stats["invoked"].append(float(grade["meta_summary"]["skill_invoked"]))
        for result in grade["assertion_results"]:
            cell = (
                self.assertions.setdefault(eval_id, {})
                .setdefault(result["id"], {})
                .setdefault(condition, {"passed": 0, "n": 0})
            )
            cell["passed"] += result["passed"]
            cell["n"] += 1

    def benchmark(self, timestamp: datetime) -> dict[str, Any]:
        """benchmark.json with eval-magic's figures and rounding, so the importer agrees."""
        run_summary: dict[str, Any] = {}
        for condition, stats in self.per_condition.items():
            run_summary[condition] = {
                key: _stats(stats[key], decimals) for key, decimals in DECIMALS.items()
            }
            if stats["invoked"]:
                run_summary[condition]["skill_invocation_n"] = len(stats["invoked"])
                rate = math.fsum(stats["invoked"]) / len(stats["invoked"])
                run_summary[condition]["skill_invocation_rate"] = _js_round(rate, 3)
        a, b = (run_summary[c] for c in CONDITIONS)
        return {
            "generated": (timestamp + timedelta(hours=2)).isoformat().replace("+00:00", "Z"),
            "mode": "new-skill",
            "conditions_compared": list(CONDITIONS),
            "missing_gradings": 0,
            "validity_warnings": [],
            "run_summary": run_summary,
            "assertions": self.assertions,
            "delta": {
                "direction": "with_skill - without_skill",
                **{
                    key: _js_round(a[key]["mean"] - b[key]["mean"], decimals)
                    for key, decimals in DECIMALS.items()
                },
            },
        }


def _write_run(
    run_dir: Path,
    texts: Texts,
    spec: EvalSpec,
    *,
    condition: str,
    run_index: int,
    skill: str,
    events: int,
    pass_p: float,
    counts: Counts,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One run folder's four files; its grading and timing, for the benchmark."""
    loads = condition == "with_skill"
    run_dir.mkdir(parents=True)
    conv, tools, final = conversation(texts, spec, skill=skill, loads_skill=loads, events=events)
    record = {
        "eval_id": spec.eval_id,
        "condition": condition,
        "skill_path": _skill_path(skill) if loads else None,
        "prompt": spec.prompt,
        "files": list(spec.files),
        "final_message": final,
        "tool_invocations": tools,
        "total_tokens": None,
        "duration_ms": None,
        "run_index": run_index,
    }
    grade = grading(texts, spec, tools, final, pass_p=pass_p, loads_skill=loads)
    timing = {
        "total_tokens": texts.rng.randint(8000, 60000),
        "duration_ms": texts.rng.randint(15000, 240000),
        "source": "completion-event",
    }
    write_json(run_dir / "run.json", record, "run", counts)
    write_json(run_dir / "conversation.json", conv, "conversation", counts)
    write_json(run_dir / "grading.json", grade, "grading", counts)
    write_json(run_dir / "timing.json", timing, "timing", counts)
    counts.runs += 1
    counts.assertion_results += len(grade["assertion_results"])
    counts.meta_results += len(grade.get("meta_results", []))
    return grade, timing


def write_iteration(
    folder: Path,
    *,
    skill: str,
    number: int,
    of: int,
    timestamp: datetime,
    specs: list[EvalSpec],
    runs: int,
    events: int,
    pools: Pools,
    seed: int,
    counts: Counts,
) -> None:
    """Iteration `number` of `of`: conditions.json, skill-snapshot.md, runs, benchmark.json."""
    rng = random.Random(f"iteration/{seed}/{skill}/{number}")
    texts = Texts(pools, rng)
    folder.mkdir(parents=True, exist_ok=True)
    write_json(
        folder / "conditions.json", _conditions(skill, number, runs, timestamp), "other", counts
    )
    snapshot = f"---\nname: {skill}\ndescription: {texts.prose(80, 200)}\n---\n\n"
    snapshot += f"# {skill}\n\n" + texts.prose(1500, 3000) + "\n"
    write_file(folder / "skill-snapshot.md", snapshot.encode(), "other", counts)

    # The skill gets better over the campaign; the control stays where it is.
    with_p = 0.5 + 0.4 * number / of
    tally = _Tally()
    for spec in specs:
        for condition in CONDITIONS:
            for k in range(1, runs + 1):
                grade, timing = _write_run(
                    folder / f"eval-{spec.eval_id}" / condition / f"run-{k}",
                    texts,
                    spec,
                    condition=condition,
                    run_index=k,
                    skill=skill,
                    events=events,
                    pass_p=with_p if condition == "with_skill" else 0.4,
                    counts=counts,
                )
                tally.add(spec.eval_id, condition, grade, timing)
    write_json(folder / "benchmark.json", tally.benchmark(timestamp), "other", counts)


def _write_skill(
    root: Path,
    skill: str,
    *,
    iterations: int,
    evals: int,
    runs: int,
    assertions: int,
    events: int,
    seed: int,
) -> Counts:
    """Write one skill's iterations (a unit of work for a worker process)."""
    pools = build_pools(seed)
    counts = Counts()
    rng = random.Random(f"skill/{seed}/{skill}")
    specs = eval_specs(skill, evals, assertions, pools, seed)
    timestamp = START
    for number in range(1, iterations + 1):
        timestamp += timedelta(days=1, minutes=rng.randint(0, 600))
        write_iteration(
            root / skill / f"iteration-{number}",
            skill=skill,
            number=number,
            of=iterations,
            timestamp=timestamp,
            specs=specs,
            runs=runs,
            events=events,
            pools=pools,
            seed=seed,
            counts=counts,
        )
        counts.iterations += 1
    counts.skills = 1
    return counts


def generate_workspace(
    root: Path,
    *,
    skills: int = 5,
    iterations: int = 20,
    evals: int = 30,
    runs: int = 3,
    assertions: int = 6,
    events: int = 40,
    seed: int = 0,
    workers: int | None = None,
) -> dict[str, Any]:
    """Write an eval-magic workspace root under `root`; return what was written.

    Skills are written in parallel (`workers` processes, default one per CPU); each skill's
    RNGs are seeded from its name, so the tree does not depend on the number of workers.
    `root` must not already hold the skills' folders (runs are never overwritten in place).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    names = skill_names(skills)
    job = partial(
        _write_skill,
        root,
        iterations=iterations,
        evals=evals,
        runs=runs,
        assertions=assertions,
        events=events,
        seed=seed,
    )
    workers = min(workers or os.cpu_count() or 1, len(names))
    total = Counts()
    for part in in_processes(job, names, workers):
        total.merge(part)
    return total.summary()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.generate", description=__doc__)
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR")
    parser.add_argument("--layout", choices=("eval-magic", "skill-creator"), default="eval-magic")
    parser.add_argument("--skills", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--evals", type=int, default=None, help="default 30 (skill-creator 300)")
    parser.add_argument("--runs", type=int, default=None, help="default 3 (skill-creator 10)")
    parser.add_argument("--assertions", type=int, default=6)
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="default: one per CPU")
    parser.add_argument(
        "--validate", action="store_true", help="check a sample of the files with jsonschema"
    )
    args = parser.parse_args(argv)
    if args.layout == "skill-creator":
        counts = generate_skill_creator_workspace(
            args.out_dir,
            evals=args.evals or 300,
            runs=args.runs or 10,
            assertions=args.assertions,
            seed=args.seed,
            workers=args.workers,
        )
        if args.validate:
            counts["validated_files"] = validate_sample(
                args.out_dir, schema_for=SKILL_CREATOR_SCHEMA_FOR
            )
        print(orjson.dumps(counts, option=orjson.OPT_INDENT_2).decode())
        return 0
    counts = generate_workspace(
        args.out_dir,
        skills=args.skills,
        iterations=args.iterations,
        evals=args.evals or 30,
        runs=args.runs or 3,
        assertions=args.assertions,
        events=args.events,
        seed=args.seed,
        workers=args.workers,
    )
    if args.validate:
        counts["validated_files"] = validate_sample(args.out_dir, schema_for=SCHEMA_FOR)
    print(orjson.dumps(counts, option=orjson.OPT_INDENT_2).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
