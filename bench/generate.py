"""Generate a synthetic eval-magic workspace root (SPEC §3.1) for import benchmarks.

    python -m bench.generate OUT_DIR [--skills 5 --iterations 20 --evals 30 --runs 3 ...]
    python -m bench.generate OUT_DIR --layout skill-creator [--evals 300 --runs 10 ...]

The layout is `<root>/<skill>/iteration-<n>/` with conditions.json, benchmark.json,
skill-snapshot.md and `eval-<id>/<condition>/run-<k>/` holding grading.json, run.json,
conversation.json and timing.json. Every file validates against the schemas in `schemas/`.
Sizes are those of real runs: conversations of ~40 events and 20–40 KB, evidence strings of
150–400 characters, final messages of 1–2 KB. Everything is a function of the seed, so two
runs with the same arguments write byte-identical trees.

Speed matters more than prose quality: texts are slices of line pools built once per seed,
so a full-scale tree (18,000 runs, ~1.1 GB) is written in ~35 s on two CPUs.

`--layout skill-creator` writes a skill-creator workspace instead (SPEC §3.3, see
bench/generate_skill_creator.py): one iteration of 300 evals x 2 configurations x 10 runs.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import multiprocessing
import os
import random
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import orjson

CONDITIONS = ("with_skill", "without_skill")
HARNESS = "claude-code"
AGENT_MODEL = "claude-sonnet-4-5-20250929"
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
EVAL_WORDS = (
    ("dirty", "seeded", "typo", "flaky", "legacy", "nested", "renamed", "partial", "stale"),
    ("tree", "branch", "migration", "fixture", "config", "endpoint", "worker", "cache", "test"),
    ("worktree", "rollback", "pagination", "refactor", "bisect", "review", "cleanup", "retry"),
)
ASSERTION_STEMS = (
    "isolated_in_worktree",
    "created_worktree",
    "ran_tests_first",
    "wrote_failing_test",
    "reported_root_cause",
    "no_unrelated_edits",
    "asked_before_destructive",
    "verified_before_claiming",
    "cited_evidence",
    "kept_main_clean",
    "summarised_changes",
    "checked_git_status",
    "used_skill_checklist",
    "minimal_diff",
    "explained_tradeoffs",
    "followed_plan",
)
GRADERS = ("transcript_check", "llm_judge", "llm_judge", "command_check", "diff_scope")
TOOLS = ("Bash", "Bash", "Bash", "Read", "Read", "Edit", "Grep", "Glob", "Write")
#: Vocabulary of the prose pool (one string keeps the list short to read).
VOCABULARY = (
    "the agent branch worktree test suite failing passes commit diff file module function "
    "config migration fixture review change plan step verify evidence output error stack "
    "trace handler request response cache retry timeout queue worker schema index query "
    "transaction rollback status clean dirty staged untracked merge rebase checkout main "
    "feature pagination users endpoint service client server build lint format check"
)
WORDS = tuple(VOCABULARY.split())
IDENTS = (
    "users",
    "paginate",
    "page_size",
    "cursor",
    "session",
    "repo",
    "worktree_path",
    "branch_name",
    "run_tests",
    "result",
    "payload",
    "handler",
    "config",
    "retries",
    "timeout",
)

DUMP = orjson.OPT_INDENT_2


@dataclass
class Pools:
    """Line pools texts are sliced from: prose for messages, code and shell output for tools."""

    prose: list[str]
    code: list[str]
    shell: list[str]
    paths: list[str]


@dataclass
class Counts:
    skills: int = 0
    iterations: int = 0
    runs: int = 0
    assertion_results: int = 0
    meta_results: int = 0
    files: int = 0
    bytes: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)

    def add_file(self, kind: str, size: int) -> None:
        self.files += 1
        self.bytes += size
        self.by_kind[kind] = self.by_kind.get(kind, 0) + size


def build_pools(seed: int) -> Pools:
    rng = random.Random(f"pools/{seed}")

    def sentence() -> str:
        words = rng.choices(WORDS, k=rng.randint(8, 22))
        words[0] = words[0].capitalize()
        if rng.random() < 0.3:
            words.insert(rng.randint(1, len(words) - 1), f"`{rng.choice(IDENTS)}`")
        return " ".join(words) + rng.choice((".", ".", ".", ":", "?"))

    def code_line() -> str:
        indent = " " * (4 * rng.randint(0, 3))
        a, b, c = rng.sample(IDENTS, 3)
        template = rng.choice(
            (
                "def {a}({b}, {c}=None):",
                "{a} = {b}.get({c!r}, {n})",
                "if {a} is None or {b} > {n}:",
                "return [{a} for {a} in {b} if {a}.{c}]",
                "assert {a}({b}) == {n}, {c!r}",
                "for {a} in {b}[{n}:]:",
                "raise ValueError(f'{a} must be positive, got {{{b}}}')",
                "# {a}: keep {b} in sync with {c}",
                "{a}.{b}({c}, limit={n})",
            )
        )
        return indent + template.format(a=a, b=b, c=c, n=rng.randint(0, 500))

    def shell_line() -> str:
        return rng.choice(
            (
                lambda: f"On branch feature/{rng.choice(IDENTS)}-{rng.randint(1, 99)}",
                lambda: f"\tmodified:   src/{rng.choice(IDENTS)}/{rng.choice(IDENTS)}.py",
                lambda: f"?? tests/test_{rng.choice(IDENTS)}.py",
                lambda: (
                    f"tests/test_{rng.choice(IDENTS)}.py::test_{rng.choice(IDENTS)}_"
                    f"{rng.choice(IDENTS)} {rng.choice(('PASSED', 'PASSED', 'FAILED'))}"
                    f" [{rng.randint(1, 100):3d}%]"
                ),
                lambda: (
                    f"-rw-r--r--  1 agent staff {rng.randint(80, 90000):6d} Jan "
                    f"{rng.randint(1, 28):2d} 10:{rng.randint(0, 59):02d} "
                    f"{rng.choice(IDENTS)}.py"
                ),
                lambda: (
                    f"{rng.randbytes(4).hex()[:7]} {rng.choice(('fix', 'add', 'refactor'))}: "
                    f"{' '.join(rng.choices(WORDS, k=5))}"
                ),
                lambda: (
                    f"Preparing worktree (new branch 'feature/{rng.choice(IDENTS)}') "
                    f"HEAD is now at {rng.randbytes(4).hex()[:7]}"
                ),
                lambda: (
                    f"E       AssertionError: assert {rng.randint(0, 50)} == {rng.randint(0, 50)}"
                ),
            )
        )()

    return Pools(
        prose=[sentence() for _ in range(6000)],
        code=[code_line() for _ in range(4000)],
        shell=[shell_line() for _ in range(4000)],
        paths=[
            f"src/{rng.choice(IDENTS)}/{rng.choice(IDENTS)}_{rng.randint(1, 40)}.py"
            for _ in range(400)
        ],
    )


class Texts:
    """Random slices of the pools, drawn from one iteration's RNG."""

    def __init__(self, pools: Pools, rng: random.Random):
        self.pools = pools
        self.rng = rng

    def _lines(self, pool: list[str], min_chars: int, max_chars: int, sep: str) -> str:
        target = self.rng.randint(min_chars, max_chars)
        start = self.rng.randrange(len(pool))
        out: list[str] = []
        size = 0
        i = start
        while size < target:
            line = pool[i % len(pool)]
            out.append(line)
            size += len(line) + 1
            i += 1
        return sep.join(out)[:max_chars]

    def prose(self, min_chars: int, max_chars: int) -> str:
        return self._lines(self.pools.prose, min_chars, max_chars, " ")

    def code(self, min_chars: int, max_chars: int) -> str:
        return self._lines(self.pools.code, min_chars, max_chars, "\n")

    def shell(self, min_chars: int, max_chars: int) -> str:
        return self._lines(self.pools.shell, min_chars, max_chars, "\n")

    def path(self) -> str:
        return self.rng.choice(self.pools.paths)


@dataclass(frozen=True)
class EvalSpec:
    eval_id: str
    prompt: str
    assertions: tuple[tuple[str, str], ...]  # (id, grader)
    files: tuple[str, ...]


def skill_names(n: int) -> list[str]:
    names = list(SKILL_NAMES[:n])
    names += [f"synthetic-skill-{i:02d}" for i in range(len(names), n)]
    return names


def eval_specs(skill: str, n: int, assertions: int, pools: Pools, seed: int) -> list[EvalSpec]:
    """The skill's evals: the same ids, prompts and assertions in every iteration."""
    rng = random.Random(f"evals/{seed}/{skill}")
    texts = Texts(pools, rng)
    specs = []
    for i in range(n):
        eval_id = "-".join(rng.choice(words) for words in EVAL_WORDS) + f"-{i:02d}"
        stems = rng.sample(ASSERTION_STEMS, min(assertions, len(ASSERTION_STEMS)))
        stems += [f"check_{k:02d}" for k in range(len(stems), assertions)]
        specs.append(
            EvalSpec(
                eval_id=eval_id,
                prompt=texts.prose(300, 700),
                assertions=tuple((s, rng.choice(GRADERS)) for s in stems),
                files=tuple(
                    f"/tmp/eval-magic/{skill}/env-{eval_id}/{texts.path()}"
                    for _ in range(rng.randint(0, 3))
                ),
            )
        )
    return specs


def _tool_call(texts: Texts, name: str, skill: str) -> tuple[Any, str]:
    rng = texts.rng
    if name == "Skill":
        return {"skill": skill}, f"Launching skill: {skill}\n" + texts.prose(200, 600)
    if name == "Bash":
        command = rng.choice(
            (
                "git status --short && git branch --show-current",
                "python -m pytest -x -q tests/",
                f"git worktree add .worktrees/feature/{rng.choice(IDENTS)} -b feature/x 2>&1",
                "git log --oneline -n 20",
                "ls -la src/",
                f"grep -rn {rng.choice(IDENTS)!r} src/ | head -40",
            )
        )
        args = {"command": command, "description": texts.prose(40, 120)}
        return args, texts.shell(300, 1200)
    if name == "Read":
        return {"file_path": "/work/" + texts.path()}, texts.code(300, 1400)
    if name == "Edit":
        args = {
            "file_path": "/work/" + texts.path(),
            "old_string": texts.code(80, 300),
            "new_string": texts.code(80, 400),
        }
        return args, "The file has been updated. " + texts.code(100, 400)
    if name == "Write":
        return {"file_path": "/work/" + texts.path(), "content": texts.code(300, 900)}, (
            "File created successfully."
        )
    if name == "Grep":
        return {"pattern": rng.choice(IDENTS), "path": "src", "output_mode": "content"}, (
            texts.code(200, 700)
        )
    return {"pattern": "**/*.py"}, "\n".join(texts.path() for _ in range(rng.randint(5, 25)))


def conversation(
    texts: Texts, spec: EvalSpec, *, skill: str, loads_skill: bool, events: int
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """(conversation.json, run.json tool_invocations, final message) of one run."""
    rng = texts.rng
    followup = events >= 8 and rng.random() < 0.3
    followup_at = rng.randint(events // 2, events - 4) if followup else -1
    out: list[dict[str, Any]] = [
        {"type": "user_message", "ordinal": 0, "round": 1, "text": spec.prompt}
    ]
    tools: list[dict[str, Any]] = []
    round_ = 1
    followups = 0
    while len(out) < events - 1:
        ordinal = len(out)
        if ordinal == followup_at:
            round_ += 1
            followups += 1
            out.append(
                {
                    "type": "user_message",
                    "ordinal": ordinal,
                    "round": round_,
                    "text": texts.prose(80, 300),
                    "origin": {"responder": "llm", "rationale": texts.prose(60, 160)},
                }
            )
        elif out[-1]["type"] != "assistant_message" and rng.random() < 0.55:
            out.append(
                {
                    "type": "assistant_message",
                    "ordinal": ordinal,
                    "round": round_,
                    "text": texts.prose(150, 700),
                }
            )
        else:
            name = "Skill" if loads_skill and not tools else rng.choice(TOOLS)
            args, result = _tool_call(texts, name, skill)
            event = {
                "type": "tool_invocation",
                "ordinal": ordinal,
                "round": round_,
                "name": name,
                "args": args,
                "result": result,
            }
            out.append(event)
            tools.append({"name": name, "args": args, "result": result, "ordinal": len(tools)})
    final = texts.prose(1000, 2000)
    out.append({"type": "assistant_message", "ordinal": len(out), "round": round_, "text": final})
    doc = {"status": "completed", "delivered_followups": followups, "events": out}
    return doc, tools, final


def grading(
    texts: Texts,
    spec: EvalSpec,
    tools: list[dict[str, Any]],
    final: str,
    *,
    pass_p: float,
    loads_skill: bool,
) -> dict[str, Any]:
    rng = texts.rng
    results = []
    for assertion_id, grader in spec.assertions:
        passed = rng.random() < pass_p
        if grader == "transcript_check" and tools:
            tool = rng.choice(tools)
            head = orjson.dumps(tool["args"]).decode()[:180]
            evidence = f"matched ordinal {tool['ordinal']}: {tool['name']} {head}"
            if len(evidence) < 150:
                evidence += " " + texts.prose(150 - len(evidence), 260 - len(evidence))
            confidence = 1.0
        else:
            quote = final[: rng.randint(60, 160)]
            evidence = (
                f'The final message says: "{quote}" ' + texts.prose(80, 220)
                if passed
                else "No evidence in the transcript that " + texts.prose(120, 330)
            )[:400]
            confidence = 1.0 if grader != "llm_judge" else round(rng.uniform(0.5, 1.0), 2)
        results.append(
            {
                "id": assertion_id,
                "passed": passed,
                "evidence": evidence,
                "confidence": confidence,
                "grader": grader,
            }
        )
    passed_n = sum(r["passed"] for r in results)
    doc: dict[str, Any] = {
        "assertion_results": results,
        "summary": {
            "passed": passed_n,
            "failed": len(results) - passed_n,
            "total": len(results),
            "pass_rate": passed_n / len(results) if results else 0,
        },
    }
    if loads_skill:
        invoked = rng.random() < 0.9
        doc["meta_results"] = [
            {
                "id": "__skill_invoked",
                "passed": invoked,
                "evidence": "Skill invocation verified from transcript (ordinal 0)."
                if invoked
                else "No Skill tool call and no behaviour attributable to the skill.",
                "confidence": 1.0,
                "grader": "transcript_check",
            }
        ]
        doc["meta_summary"] = {
            "passed": int(invoked),
            "failed": int(not invoked),
            "total": 1,
            "skill_invoked": invoked,
        }
    return doc


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


def _write(path: Path, data: bytes, kind: str, counts: Counts) -> None:
    path.write_bytes(data)
    counts.add_file(kind, len(data))


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
    rng = random.Random(f"iteration/{seed}/{skill}/{number}")
    texts = Texts(pools, rng)
    folder.mkdir(parents=True, exist_ok=True)
    skill_path = f"/home/agent/skills/{skill}/SKILL.md"
    stamp = timestamp.isoformat().replace("+00:00", "Z")
    conditions = {
        "mode": "new-skill",
        "baseline": None,
        "conditions": [
            {"name": "with_skill", "skill_path": skill_path, "staged_skill_slug": skill},
            {"name": "without_skill", "skill_path": None, "staged_skill_slug": None},
        ],
        "timestamp": stamp,
        "harness": HARNESS,
        "runs": runs,
        "agent_model": AGENT_MODEL,
        "judge_model": JUDGE_MODEL,
        "responder_model": None,
        "label": f"{skill} iteration {number}",
    }
    _write(folder / "conditions.json", orjson.dumps(conditions, option=DUMP), "other", counts)
    snapshot = f"---\nname: {skill}\ndescription: {texts.prose(80, 200)}\n---\n\n"
    snapshot += f"# {skill}\n\n" + texts.prose(1500, 3000) + "\n"
    _write(folder / "skill-snapshot.md", snapshot.encode(), "other", counts)

    # The skill gets better over the campaign; the control stays where it is.
    with_p = 0.5 + 0.4 * number / of
    per_condition: dict[str, dict[str, list[float]]] = {
        c: {"pass_rate": [], "duration_ms": [], "total_tokens": [], "invoked": []}
        for c in CONDITIONS
    }
    assertion_counts: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    for spec in specs:
        for condition in CONDITIONS:
            loads = condition == "with_skill"
            for k in range(1, runs + 1):
                run_dir = folder / f"eval-{spec.eval_id}" / condition / f"run-{k}"
                run_dir.mkdir(parents=True)
                conv, tools, final = conversation(
                    texts, spec, skill=skill, loads_skill=loads, events=events
                )
                record = {
                    "eval_id": spec.eval_id,
                    "condition": condition,
                    "skill_path": skill_path if loads else None,
                    "prompt": spec.prompt,
                    "files": list(spec.files),
                    "final_message": final,
                    "tool_invocations": tools,
                    "total_tokens": None,
                    "duration_ms": None,
                    "run_index": k,
                }
                grade = grading(
                    texts, spec, tools, final, pass_p=with_p if loads else 0.4, loads_skill=loads
                )
                timing = {
                    "total_tokens": rng.randint(8000, 60000),
                    "duration_ms": rng.randint(15000, 240000),
                    "source": "completion-event",
                }
                _write(run_dir / "run.json", orjson.dumps(record, option=DUMP), "run", counts)
                _write(
                    run_dir / "conversation.json",
                    orjson.dumps(conv, option=DUMP),
                    "conversation",
                    counts,
                )
                for name, doc, kind in (
                    ("grading.json", grade, "grading"),
                    ("timing.json", timing, "timing"),
                ):
                    _write(run_dir / name, orjson.dumps(doc, option=DUMP), kind, counts)
                counts.runs += 1
                counts.assertion_results += len(grade["assertion_results"])
                counts.meta_results += len(grade.get("meta_results", []))
                stats = per_condition[condition]
                stats["pass_rate"].append(grade["summary"]["pass_rate"])
                stats["duration_ms"].append(timing["duration_ms"])
                stats["total_tokens"].append(timing["total_tokens"])
                if "meta_summary" in grade:
                    stats["invoked"].append(float(grade["meta_summary"]["skill_invoked"]))
                for result in grade["assertion_results"]:
                    cell = (
                        assertion_counts.setdefault(spec.eval_id, {})
                        .setdefault(result["id"], {})
                        .setdefault(condition, {"passed": 0, "n": 0})
                    )
                    cell["passed"] += result["passed"]
                    cell["n"] += 1

    run_summary: dict[str, Any] = {}
    for condition, stats in per_condition.items():
        run_summary[condition] = {
            key: _stats(stats[key], decimals) for key, decimals in DECIMALS.items()
        }
        if stats["invoked"]:
            run_summary[condition]["skill_invocation_n"] = len(stats["invoked"])
            rate = math.fsum(stats["invoked"]) / len(stats["invoked"])
            run_summary[condition]["skill_invocation_rate"] = _js_round(rate, 3)
    a, b = (run_summary[c] for c in CONDITIONS)
    benchmark = {
        "generated": (timestamp + timedelta(hours=2)).isoformat().replace("+00:00", "Z"),
        "mode": "new-skill",
        "conditions_compared": list(CONDITIONS),
        "missing_gradings": 0,
        "validity_warnings": [],
        "run_summary": run_summary,
        "assertions": assertion_counts,
        "delta": {
            "direction": "with_skill - without_skill",
            **{
                key: _js_round(a[key]["mean"] - b[key]["mean"], decimals)
                for key, decimals in DECIMALS.items()
            },
        },
    }
    _write(folder / "benchmark.json", orjson.dumps(benchmark, option=DUMP), "other", counts)


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
    if workers > 1:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            parts = list(pool.map(job, names))
    else:
        parts = [job(name) for name in names]
    total = Counts()
    for part in parts:
        for name in ("skills", "iterations", "runs", "assertion_results", "meta_results"):
            setattr(total, name, getattr(total, name) + getattr(part, name))
        total.files += part.files
        total.bytes += part.bytes
        for kind, size in part.by_kind.items():
            total.by_kind[kind] = total.by_kind.get(kind, 0) + size
    return {
        "skills": total.skills,
        "iterations": total.iterations,
        "runs": total.runs,
        "assertion_results": total.assertion_results,
        "meta_results": total.meta_results,
        "files": total.files,
        "bytes": total.bytes,
        "bytes_by_kind": dict(sorted(total.by_kind.items())),
    }


#: Which schema in schemas/ each generated JSON file must satisfy.
SCHEMA_FOR = {
    "conditions.json": "conditions.schema.json",
    "benchmark.json": "benchmark.schema.json",
    "grading.json": "grading.schema.json",
    "run.json": "run-record.schema.json",
    "conversation.json": "conversation.schema.json",
    "timing.json": "timing.schema.json",
}


def validate_sample(
    root: Path, *, every: int = 25, schema_for: dict[str, str] | None = None
) -> int:
    """Check every `every`-th JSON file (and every iteration file) with jsonschema.

    `schema_for` maps file names to schema files (default: eval-magic's); other JSON files
    (a run's outputs) are not checked. Raises ValueError naming the file and the first
    error; returns how many were checked.
    """
    import jsonschema

    schema_for = schema_for or SCHEMA_FOR
    schemas_dir = Path(__file__).resolve().parent.parent / "schemas"
    validators = {}
    for name, schema_file in schema_for.items():
        schema = orjson.loads((schemas_dir / schema_file).read_bytes())
        validators[name] = jsonschema.validators.validator_for(schema)(schema)
    paths = sorted(p for p in Path(root).rglob("*.json") if p.name in validators)
    sample = set(paths[::every]) | {p for p in paths if p.parent.name.startswith("iter")}
    for path in sorted(sample):
        error = jsonschema.exceptions.best_match(
            validators[path.name].iter_errors(orjson.loads(path.read_bytes()))
        )
        if error is not None:
            raise ValueError(f"{path} at /{'/'.join(map(str, error.path))}: {error.message}")
    return len(sample)


def tree_digest(root: Path) -> str:
    """sha256 over every file's path and bytes, to check that a seed reproduces a tree."""
    h = hashlib.sha256()
    for path in sorted(p for p in Path(root).rglob("*") if p.is_file()):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


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
        from bench.generate_skill_creator import SCHEMA_FOR as SKILL_CREATOR_SCHEMA_FOR
        from bench.generate_skill_creator import generate_skill_creator_workspace

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
        counts["validated_files"] = validate_sample(args.out_dir)
    print(orjson.dumps(counts, option=orjson.OPT_INDENT_2).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
