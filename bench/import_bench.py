"""Import performance benchmark: the importer against a floor of raw orjson + sqlite3.

    python bench/import_bench.py [--skills 5 --iterations 20 --evals 30 --runs 3
                                  --assertions 6] [--quick] [--keep DIR] [--repeat N]
                                 [--check] [--profile FILE]

Generates an eval-magic workspace (bench/generate.py), then measures:

(a) `manage.py importworkspace WS` into a fresh SQLite database, in a subprocess, so its wall
    time and peak RSS are those of the import alone (migrations run first, untimed);
(b) the floor: this process parses the same JSON files with orjson and inserts the same rows
    (skills, eval cases, iterations, conditions, runs with their JSON columns serialised,
    gradings, assertion results) with `sqlite3.executemany` in one transaction, into another
    freshly migrated database;
(c) `manage.py importworkspace WS` again into database (a): everything should be skipped.

Targets, on wall time: (a) <= 3 x (b); (c) <= 0.5 x (a); peak RSS of (a) < 300 MB. CPU
time is printed beside wall time: on a shared machine it is the steadier figure. The exit
status is 0 (this is a report) unless --check is given and a target is missed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import pstats
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))  # run as a script: make `bench` importable

from bench import generate  # noqa: E402
from bench.floor import floor_import  # noqa: E402
from bench.generate import generate_workspace  # noqa: E402

MANAGE = PROJECT / "manage.py"
FULL = {"skills": 5, "iterations": 20, "evals": 30, "runs": 3, "assertions": 6}
QUICK = {"skills": 1, "iterations": 3, "evals": 30, "runs": 3, "assertions": 6}
TARGET_IMPORT_OVER_FLOOR = 3.0
TARGET_REIMPORT_OVER_IMPORT = 0.5
TARGET_PEAK_MB = 300
TABLES = (
    "runs_skill",
    "runs_evalcase",
    "runs_iteration",
    "runs_condition",
    "runs_run",
    "grading_grading",
    "grading_assertionresult",
)

#: Runs a command and writes its wall time and peak RSS to a file. A wrapper process, because
#: RUSAGE_CHILDREN of this process would also count migrate and the generator's workers.
MEASURE = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.call(sys.argv[2:])
seconds = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
with open(sys.argv[1], "w") as handle:
    json.dump(
        {
            "code": code,
            "seconds": seconds,
            "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "peak_bytes": usage.ru_maxrss * scale,
        },
        handle,
    )
"""


@dataclass
class Measured:
    seconds: float
    #: user + system CPU time: what the work costs, much less sensitive than wall time to
    #: other processes competing for the CPUs.
    cpu_seconds: float
    peak_mb: float | None = None
    output: str = ""


# --- environment ------------------------------------------------------------------------


def django_env(db: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(DATABASE_URL=f"sqlite:///{db}", SECRET_KEY="bench", DEBUG="0")
    return env


def fresh_database(db: Path) -> None:
    """Delete `db` (and its WAL files) and run the migrations into it, untimed."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    subprocess.run(
        [sys.executable, str(MANAGE), "migrate", "--verbosity", "0", "--skip-checks"],
        cwd=PROJECT,
        env=django_env(db),
        check=True,
    )


def measured_command(args: list[str], *, db: Path, scratch: Path) -> Measured:
    """Run `manage.py ARGS…` in a subprocess; its wall time, peak RSS and output.

    System checks are skipped: they are not the import, and a half-edited URLconf elsewhere
    in the project should not stop the benchmark.
    """
    result_file = scratch / "measure.json"
    command = [sys.executable, str(MANAGE), *args, "--skip-checks"]
    proc = subprocess.run(
        [sys.executable, "-c", MEASURE, str(result_file), *command],
        cwd=PROJECT,
        env=django_env(db),
        capture_output=True,
        text=True,
    )
    measure = json.loads(result_file.read_text())
    output = (proc.stdout + proc.stderr).strip()
    if measure["code"] != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed (exit {measure['code']}):\n{output}")
    return Measured(
        measure["seconds"], measure["cpu_seconds"], measure["peak_bytes"] / 2**20, output
    )


def git_head() -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=PROJECT, capture_output=True, text=True
        ).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "(no commits yet)"
    if git("status", "--porcelain", "--untracked-files=no") or not git("rev-parse", "HEAD"):
        head += " (with uncommitted changes)"
    return head


def machine() -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"nproc {cpus}, {platform.machine()}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )


# --- reporting ----------------------------------------------------------------------------


def row_counts(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        conn.close()


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def print_profile(path: Path, limit: int = 30) -> None:
    stats = pstats.Stats(str(path))
    stats.strip_dirs()
    for key in ("cumulative", "tottime"):
        print(f"\n--- importer profile, top {limit} by {key} ({path}) ---")
        stats.sort_stats(key).print_stats(limit)


def prepare_workspace(base: Path, scale: dict[str, int], seed: int) -> Path:
    """Generate the workspace under `base`, or reuse one generated there with the same scale."""
    workspace = base / "workspace"
    manifest = base / "manifest.json"
    # A changed generator writes a different tree: its source's hash is part of the key.
    generator = hashlib.sha256(Path(generate.__file__).read_bytes()).hexdigest()[:16]
    wanted = {**scale, "seed": seed, "generator": generator}
    if workspace.is_dir() and manifest.is_file():
        recorded = json.loads(manifest.read_text())
        if recorded.get("scale") == wanted:
            print(f"workspace: reusing {workspace}")
            return print_workspace(workspace, recorded["counts"], recorded["seconds"])
    shutil.rmtree(workspace, ignore_errors=True)
    start = time.perf_counter()
    counts = generate_workspace(workspace, seed=seed, **scale)
    seconds = time.perf_counter() - start
    manifest.write_text(json.dumps({"scale": wanted, "counts": counts, "seconds": seconds}))
    # Flush the freshly written gigabyte now, or its writeback competes with import (a).
    os.sync()
    return print_workspace(workspace, counts, seconds)


def print_workspace(workspace: Path, counts: dict[str, Any], seconds: float) -> Path:
    print(
        f"workspace: {counts['skills']} skills, {counts['iterations']} iterations, "
        f"{counts['runs']:,} runs, {counts['assertion_results']:,} assertion results "
        f"(+{counts['meta_results']:,} meta), {counts['files']:,} files, "
        f"{counts['bytes'] / 2**20:,.0f} MB (generated in {seconds:.1f} s)"
    )
    per_run = {k: v / max(counts["runs"], 1) / 1024 for k, v in counts["bytes_by_kind"].items()}
    print(
        "  per run: "
        + ", ".join(f"{k} {v:.1f} KB" for k, v in per_run.items() if k != "other")
        + f"  ({workspace})"
    )
    return workspace


def load_note() -> str:
    load = os.getloadavg()[0]
    cpus = os.cpu_count() or 1
    busy = "  (the machine is busy: figures will be noisy)" if load > 0.5 * cpus else ""
    return f"load average {load:.2f}{busy}"


@dataclass
class Round:
    a: Measured
    b: Measured
    c: Measured


def measure_round(workspace: Path, base: Path) -> tuple[Round, list[str]]:
    db_a, db_b = base / "a.sqlite3", base / "floor.sqlite3"
    fresh_database(db_a)
    a = measured_command(["importworkspace", str(workspace)], db=db_a, scratch=base)
    fresh_database(db_b)
    start, start_cpu = time.perf_counter(), time.process_time()
    notes = floor_import(workspace, db_b)
    b = Measured(time.perf_counter() - start, time.process_time() - start_cpu)
    c = measured_command(["importworkspace", str(workspace)], db=db_a, scratch=base)
    return Round(a, b, c), notes


def report(rounds: list[Round], base: Path, notes: list[str]) -> list[bool]:
    """Print the figures (best of the rounds) and the verdicts; the verdicts."""
    if len(rounds) > 1:
        for i, r in enumerate(rounds, start=1):
            print(
                f"  round {i}: (a) {r.a.seconds:.2f} s, (b) {r.b.seconds:.2f} s, "
                f"(c) {r.c.seconds:.2f} s (wall); peak (a) {r.a.peak_mb:.0f} MB"
            )
    a = min((r.a for r in rounds), key=lambda m: m.seconds)
    b = min((r.b for r in rounds), key=lambda m: m.seconds)
    c = min((r.c for r in rounds), key=lambda m: m.seconds)
    peak_a = max(r.a.peak_mb or 0 for r in rounds)
    peak_c = max(r.c.peak_mb or 0 for r in rounds)
    best = ", best of each" if len(rounds) > 1 else ""
    print(f"\n{'':30}{'wall':>9}{'CPU':>10}{'peak RSS':>11}{best}")
    for name, m, peak in (
        ("(a) import into a fresh DB", a, f"{peak_a:7.0f} MB"),
        ("(b) floor, orjson + sqlite3", b, ""),
        ("(c) re-import into (a)'s DB", c, f"{peak_c:7.0f} MB"),
    ):
        print(f"{name:<30}{m.seconds:7.2f} s{m.cpu_seconds:8.2f} s{peak:>11}")
    print(f"  (a) says: {a.output}")
    print(f"  (c) says: {c.output}")

    counts_a, counts_b = row_counts(base / "a.sqlite3"), row_counts(base / "floor.sqlite3")
    print("\nrows written                (a) importer   (b) floor")
    for table in TABLES:
        flag = "" if counts_a[table] == counts_b[table] else "   <- differs"
        print(f"  {table:<26}{counts_a[table]:>12,}{counts_b[table]:>12,}{flag}")
    for note in notes:
        print(f"  floor: {note}")
    if not re.search(r"runs: 0 created, 0 updated, \d+ skipped", c.output):
        print("  !! the re-import did not skip every run")

    ratio_ab, ratio_ca = a.seconds / b.seconds, c.seconds / a.seconds
    cpu_ab, cpu_ca = a.cpu_seconds / b.cpu_seconds, c.cpu_seconds / a.cpu_seconds
    verdicts = [
        (f"(a)/(b) = {ratio_ab:5.2f}x (CPU {cpu_ab:.2f}x)", f"<= {TARGET_IMPORT_OVER_FLOOR:g}x"),
        (f"(c)/(a) = {ratio_ca:5.2f}x (CPU {cpu_ca:.2f}x)", f"<= {TARGET_REIMPORT_OVER_IMPORT:g}x"),
        (f"peak RSS of (a) = {peak_a:.0f} MB", f"< {TARGET_PEAK_MB} MB"),
    ]
    oks = [
        ratio_ab <= TARGET_IMPORT_OVER_FLOOR,
        ratio_ca <= TARGET_REIMPORT_OVER_IMPORT,
        peak_a < TARGET_PEAK_MB,
    ]
    print()
    for (figure, target), ok in zip(verdicts, oks, strict=True):
        print(f"  {figure:<34} target {target:<9} {verdict(ok)}")
    return oks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in FULL:
        parser.add_argument(f"--{name}", type=int, default=None, help=f"default {FULL[name]}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="1 skill x 3 iterations")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="work in DIR and keep it")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help="measure N times, report the best"
    )
    parser.add_argument(
        "--profile", type=Path, metavar="FILE", help="also cProfile an import into FILE"
    )
    args = parser.parse_args(argv)
    scale = {k: getattr(args, k) or (QUICK if args.quick else FULL)[k] for k in FULL}

    base = (args.keep or Path(tempfile.mkdtemp(prefix="evalsite-bench-"))).resolve()
    base.mkdir(parents=True, exist_ok=True)
    try:
        print(f"evalsite import benchmark, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
        print(f"git HEAD: {git_head()}")
        print(f"machine: {machine()}")
        workspace = prepare_workspace(base, scale, args.seed)
        print(f"before measuring: {load_note()}")
        rounds = []
        for _ in range(max(args.repeat, 1)):
            measured, notes = measure_round(workspace, base)
            rounds.append(measured)
        oks = report(rounds, base, notes)
        print(f"after measuring: {load_note()}")
        if args.quick or scale != FULL:
            print("(the targets are set for the full scale; fixed start-up costs weigh more here)")
        if args.profile:
            profile_import(workspace, base / "profile.sqlite3", args.profile.resolve())
        return 1 if args.check and not all(oks) else 0
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


def profile_import(workspace: Path, db: Path, out: Path) -> None:
    """cProfile one more import into a fresh database, and print its hot spots."""
    fresh_database(db)
    subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), str(MANAGE), "importworkspace"]
        + ["--skip-checks", str(workspace)],
        cwd=PROJECT,
        env=django_env(db),
        check=True,
        capture_output=True,
    )
    print_profile(out)


if __name__ == "__main__":
    sys.exit(main())
