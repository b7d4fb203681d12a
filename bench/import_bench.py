"""Import benchmark: `importworkspace` against a floor of raw orjson + executemany.

    python bench/import_bench.py [--layout eval-magic|skill-creator]
                                 [--database sqlite|postgres|both]
                                 [--skills 5 --iterations 20 --evals 30 --runs 3
                                  --assertions 6] [--quick] [--keep DIR] [--repeat N]
                                 [--compare] [--check] [--profile FILE]

On each database: (a) the import into a fresh database, in a subprocess; (b) the floor
(bench/floor.py, bench/floor_skill_creator.py) writing the same rows in this process; (c) the
import again into (a)'s database, which should skip everything; for skill-creator also (d)
folder to first view beside the peer (bench/import_first_view.py). Targets, on wall time:
(a) <= 3 x (b), (c) <= 0.5 x (a), peak RSS of (a) < 300 MB, (d) < the peer's time. The exit
status is 0 (a report) unless --check is given and a target is missed.
"""

from __future__ import annotations

import argparse
import json
import pstats
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))  # run as a script: make `bench` importable

from bench.databases import DATABASES, Databases, databases, server_version  # noqa: E402
from bench.django_process import MANAGE, django_env  # noqa: E402
from bench.floor import floor_import  # noqa: E402
from bench.floor_skill_creator import floor_import_skill_creator  # noqa: E402
from bench.import_compare import TABLES, differing_columns, row_counts  # noqa: E402
from bench.import_first_view import (  # noqa: E402
    measure_first_view,
    measure_peer,
    report_first_view,
)
from bench.reporting import load_note, print_header, verdict  # noqa: E402
from bench.workspaces import (  # noqa: E402
    FULL,
    QUICK,
    SKILL_CREATOR_FULL,
    SKILL_CREATOR_QUICK,
    prepare_workspace,
    working_folder,
)

LAYOUTS = ("eval-magic", "skill-creator")
TARGET_IMPORT_OVER_FLOOR = 3.0
TARGET_REIMPORT_OVER_IMPORT = 0.5
TARGET_PEAK_MB = 300

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


@dataclass
class Round:
    a: Measured
    b: Measured
    c: Measured


@dataclass
class Setup:
    """One database kind's measurement: where the import and the floor write."""

    kind: str
    layout: str
    url_a: str = ""
    url_b: str = ""


def measured_command(args: list[str], *, db: str, scratch: Path) -> Measured:
    """Run `manage.py ARGS… --skip-checks` in a subprocess; its wall time, peak RSS, output."""
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


def run_floor(layout: str, workspace: Path, url: str) -> list[str]:
    """The floor into `url`: a SQLite file's path, or the PostgreSQL URL itself."""
    target = Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:") else url
    if layout == "skill-creator":
        return floor_import_skill_creator(workspace, target)
    return floor_import(workspace, target)


def measure_round(
    workspace: Path, base: Path, pool: Databases, setup: Setup
) -> tuple[Round, list[str]]:
    setup.url_a = pool.fresh("a")
    a = measured_command(["importworkspace", str(workspace)], db=setup.url_a, scratch=base)
    setup.url_b = pool.fresh("floor")
    start, start_cpu = time.perf_counter(), time.process_time()
    notes = run_floor(setup.layout, workspace, setup.url_b)
    b = Measured(time.perf_counter() - start, time.process_time() - start_cpu)
    c = measured_command(["importworkspace", str(workspace)], db=setup.url_a, scratch=base)
    return Round(a, b, c), notes


def print_rows_written(setup: Setup, notes: list[str], *, compare: bool) -> None:
    """The two databases' row counts side by side, and with `compare` their contents."""
    counts_a, counts_b = row_counts(setup.url_a), row_counts(setup.url_b)
    print("\nrows written                (a) importer   (b) floor")
    for table in TABLES:
        flag = "" if counts_a[table] == counts_b[table] else "   <- differs"
        print(f"  {table:<26}{counts_a[table]:>12,}{counts_b[table]:>12,}{flag}")
    for note in notes:
        print(f"  floor: {note}")
    if compare:
        differ = differing_columns(setup.url_a, setup.url_b)
        if not differ:
            print("  same content in every column but ids and clocks")
        for table, columns in differ.items():
            print(f"  !! {table}: (a) and (b) differ in {', '.join(columns)}")


def report(rounds: list[Round], setup: Setup, notes: list[str], *, compare: bool) -> list[bool]:
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
    driver = "sqlite3" if setup.kind == "sqlite" else "psycopg"
    print(f"\n{'':30}{'wall':>9}{'CPU':>10}{'peak RSS':>11}{best}")
    for name, m, peak in (
        ("(a) import into a fresh DB", a, f"{peak_a:7.0f} MB"),
        (f"(b) floor, orjson + {driver}", b, ""),
        ("(c) re-import into (a)'s DB", c, f"{peak_c:7.0f} MB"),
    ):
        print(f"{name:<30}{m.seconds:7.2f} s{m.cpu_seconds:8.2f} s{peak:>11}")
    print(f"  (a) says: {a.output}")
    print(f"  (c) says: {c.output}")
    print_rows_written(setup, notes, compare=compare)
    if not re.search(r"runs: 0 created, 0 updated, \d+ unchanged", c.output):
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


def profile_import(workspace: Path, db: str, out: Path, limit: int = 30) -> None:
    """cProfile one more import into a fresh database, and print its hot spots."""
    subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), str(MANAGE), "importworkspace"]
        + ["--skip-checks", str(workspace)],
        cwd=PROJECT,
        env=django_env(db),
        check=True,
        capture_output=True,
    )
    stats = pstats.Stats(str(out))
    stats.strip_dirs()
    for key in ("cumulative", "tottime"):
        print(f"\n--- importer profile, top {limit} by {key} ({out}) ---")
        stats.sort_stats(key).print_stats(limit)


def measure_database(kind: str, workspace: Path, base: Path, args: argparse.Namespace) -> list:
    """(a), (b), (c) and, for skill-creator, (d) on one kind of database; the verdicts."""
    print(f"\n=== {server_version(kind)} ===")
    print(f"before measuring: {load_note()}")
    setup = Setup(kind, args.layout)
    repeat = max(args.repeat, 1)
    with databases(kind, base) as pool:
        rounds = []
        for _ in range(repeat):
            measured, notes = measure_round(workspace, base, pool, setup)
            rounds.append(measured)
        compare = args.compare or args.layout == "skill-creator"
        oks = report(rounds, setup, notes, compare=compare)
        if args.layout == "skill-creator":
            # Each round: the peer, then evalsite, back to back, so that both see the same
            # machine (other processes' load moves both).
            views = []
            for _ in range(repeat):
                peer_round = measure_peer(workspace, base)
                url = pool.fresh("view")
                log = base / f"gunicorn-{kind}.log"
                view = measure_first_view(MANAGE, workspace, url=url, env=django_env(url), log=log)
                views.append((peer_round, view))
            oks.append(report_first_view(views))
        print(f"after measuring: {load_note()}")
        if args.profile:
            profile = args.profile.resolve()
            if args.database == "both":
                profile = profile.with_name(f"{profile.stem}-{kind}{profile.suffix}")
            profile_import(workspace, pool.fresh("profile"), profile)
    return oks


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", choices=LAYOUTS, default="eval-magic")
    parser.add_argument("--database", choices=(*DATABASES, "both"), default="sqlite")
    for name in FULL:
        also = f" (skill-creator {SKILL_CREATOR_FULL[name]})" if name in SKILL_CREATOR_FULL else ""
        parser.add_argument(f"--{name}", type=int, default=None, help=f"default {FULL[name]}{also}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a small workspace, in seconds")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="work in DIR and keep it")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help="measure N times, report the best"
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="compare every column of (a) and (b), not only row counts (always on for "
        "skill-creator; at eval-magic's full scale it reads ~2 GB)",
    )
    parser.add_argument(
        "--profile", type=Path, metavar="FILE", help="also cProfile an import into FILE"
    )
    args = parser.parse_args(argv)
    if args.layout == "skill-creator" and (args.skills or args.iterations):
        parser.error("--skills and --iterations are eval-magic's: skill-creator has one")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.layout == "skill-creator":
        full, quick = SKILL_CREATOR_FULL, SKILL_CREATOR_QUICK
    else:
        full, quick = FULL, QUICK
    scale = {k: getattr(args, k) or (quick if args.quick else full)[k] for k in full}
    kinds = DATABASES if args.database == "both" else (args.database,)

    # Unwind like Ctrl-C on SIGTERM, so the PostgreSQL databases are dropped all the same.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with working_folder(args.keep, "evalsite-bench-") as base:
        print_header(f"import benchmark ({args.layout})")
        workspace = prepare_workspace(base, scale, args.seed, args.layout)
        oks = []
        for kind in kinds:
            oks += measure_database(kind, workspace, base, args)
        if args.quick or scale != full:
            print("(the targets are set for the full scale; fixed start-up costs weigh more here)")
        return 1 if args.check and not all(oks) else 0


if __name__ == "__main__":
    sys.exit(main())
