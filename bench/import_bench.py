"""Import performance benchmark: the importer against a floor of raw orjson + executemany.

    python bench/import_bench.py [--layout eval-magic|skill-creator]
                                 [--database sqlite|postgres|both]
                                 [--skills 5 --iterations 20 --evals 30 --runs 3
                                  --assertions 6] [--quick] [--keep DIR] [--repeat N]
                                 [--check] [--profile FILE]

Generates a workspace (bench/generate.py): by default eval-magic's, 5 skills x 20
iterations; with `--layout skill-creator` one skill-creator iteration of 300 evals x 2
configurations x 10 runs (bench/generate_skill_creator.py). Then, on each database, measures:

(a) `manage.py importworkspace WS` into a fresh database, in a subprocess, so its wall time
    and peak RSS are those of the import alone (migrations run first, untimed);
(b) the floor: this process parses the same JSON files with orjson and inserts the same rows
    (skills, eval cases, iterations, conditions, runs with their JSON columns serialised,
    gradings, assertion results) with `executemany` in one transaction, into another
    freshly migrated database (bench/floor.py, bench/floor_skill_creator.py);
(c) `manage.py importworkspace WS` again into database (a): everything should be skipped;
(d) skill-creator only: folder to first view (bench/import_first_view.py) beside the peer's
    aggregate + review (bench/peer_skill_creator.py), measured just before it.

Targets, on wall time: (a) <= 3 x (b); (c) <= 0.5 x (a); peak RSS of (a) < 300 MB;
(d) < the peer's aggregate + review, with the search index exact once the import ends. CPU
time is printed beside wall time: on a shared machine it is the steadier figure. The exit
status is 0 (this is a report) unless --check is given and a target is missed.

SQLite databases are files in the working folder; PostgreSQL ones are created on the local
cluster as the `evalsite` role (.ci/run) and dropped at the end, even on error.
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
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

PROJECT = Path(__file__).resolve().parent.parent
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))  # run as a script: make `bench` importable

from bench import generate, generate_skill_creator  # noqa: E402
from bench.floor import COLUMNS, floor_import  # noqa: E402
from bench.floor_skill_creator import floor_import_skill_creator  # noqa: E402
from bench.generate import generate_workspace  # noqa: E402
from bench.generate_skill_creator import generate_skill_creator_workspace  # noqa: E402
from bench.import_first_view import FirstView, measure_first_view  # noqa: E402
from bench.peer_skill_creator import (  # noqa: E402
    aggregate_like_skill_creator,
    review_like_skill_creator,
)

MANAGE = PROJECT / "manage.py"
FULL = {"skills": 5, "iterations": 20, "evals": 30, "runs": 3, "assertions": 6}
QUICK = {"skills": 1, "iterations": 3, "evals": 30, "runs": 3, "assertions": 6}
#: skill-creator: one iteration, 300 evals x 2 configurations x 10 runs, 6 expectations.
SKILL_CREATOR_FULL = {"evals": 300, "runs": 10, "assertions": 6}
SKILL_CREATOR_QUICK = {"evals": 30, "runs": 3, "assertions": 6}
LAYOUTS = ("eval-magic", "skill-creator")
DATABASES = ("sqlite", "postgres")
#: The local cluster and the role .ci/run creates; the role may create databases.
POSTGRES = "postgres://evalsite:evalsite@127.0.0.1:5432"
TARGET_IMPORT_OVER_FLOOR = 3.0
TARGET_REIMPORT_OVER_IMPORT = 0.5
TARGET_PEAK_MB = 300
TABLES = (
    "runs_skill",
    "runs_evalcase",
    "runs_iteration",
    "runs_condition",
    "runs_run",
    "runs_grading",
    "runs_assertionresult",
    "search_searchdocument",
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


def django_env(database_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(DATABASE_URL=database_url, SECRET_KEY="bench", DEBUG="0")
    return env


def migrate(database_url: str) -> None:
    subprocess.run(
        [sys.executable, str(MANAGE), "migrate", "--verbosity", "0", "--skip-checks"],
        cwd=PROJECT,
        env=django_env(database_url),
        check=True,
    )


class Databases:
    """Fresh, migrated databases of one kind; PostgreSQL ones are dropped by `drop_all`."""

    def __init__(self, kind: str, base: Path):
        self.kind = kind
        self.base = base
        self.created: list[str] = []

    def fresh(self, name: str) -> str:
        """Delete and re-create database `name`, run the migrations (untimed); its URL."""
        if self.kind == "sqlite":
            db = self.base / f"{name}.sqlite3"
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            url = f"sqlite:///{db}"
        else:
            import psycopg

            dbname = f"evalsite_bench_import_{name}_{os.getpid()}"
            drop_database(dbname)
            with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as admin:
                admin.execute(f'CREATE DATABASE "{dbname}"')
            if dbname not in self.created:
                self.created.append(dbname)
            url = f"{POSTGRES}/{dbname}"
        migrate(url)
        return url

    def drop_all(self) -> None:
        if not self.created:
            return

        for dbname in self.created:
            drop_database(dbname)
        self.created.clear()


def drop_database(dbname: str, attempts: int = 20) -> None:
    """Drop a bench database, ending its connections.

    FORCE refuses when an autovacuum worker (the superuser's, busy after a large import)
    is on it; a plain DROP ends that worker itself, so it is tried next, a few times.
    """
    import psycopg

    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as admin:
        try:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
            return
        except psycopg.errors.InsufficientPrivilege:
            pass
        for attempt in range(attempts):
            try:
                admin.execute(f'DROP DATABASE IF EXISTS "{dbname}"')
                return
            except psycopg.errors.ObjectInUse:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.5)


@contextmanager
def databases(kind: str, base: Path) -> Iterator[Databases]:
    pool = Databases(kind, base)
    try:
        yield pool
    finally:
        pool.drop_all()


def floor_target(url: str) -> Path | str:
    """What the floor connects to: a SQLite file's path, or the PostgreSQL URL itself."""
    return Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:") else url


def server_version(kind: str) -> str:
    if kind == "sqlite":
        return f"SQLite {sqlite3.sqlite_version}"
    import psycopg

    with psycopg.connect(f"{POSTGRES}/postgres") as conn:
        return "PostgreSQL " + conn.execute("SHOW server_version").fetchone()[0].split()[0]


def measured_command(args: list[str], *, db: str, scratch: Path) -> Measured:
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


def _query(url: str, sql: str) -> list[tuple[Any, ...]]:
    if url.startswith("sqlite:"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()


def row_counts(url: str) -> dict[str, int]:
    return {t: _query(url, f"SELECT count(*) FROM {t}")[0][0] for t in TABLES}


#: Columns that differ between two correct imports: ids, foreign keys, clocks.
NOT_CONTENT = {
    "id",
    "skill_id",
    "iteration_id",
    "condition_id",
    "eval_case_id",
    "run_id",
    "grading_id",
    "created_at",
    "updated_at",
    "imported_at",
}


def _canonical(value: Any) -> bytes:
    """A value as comparable bytes: JSON text parsed (SQLite stores it as text, formatted
    by whoever wrote it), floats as they print, everything else through orjson."""
    if isinstance(value, str) and value[:1] in "[{":
        with suppress(orjson.JSONDecodeError):
            value = orjson.loads(value)
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)


def _present(url: str, table: str) -> set[str]:
    """The columns `table` has as migrated."""
    if url.startswith("sqlite:"):
        return {row[1] for row in _query(url, f"PRAGMA table_info({table})")}
    sql = f"SELECT column_name FROM information_schema.columns WHERE table_name = '{table}'"
    return {row[0] for row in _query(url, sql)}


def differing_columns(url_a: str, url_b: str) -> dict[str, list[str]]:
    """Per table, the content columns whose values (as multisets) differ between a and b."""
    found = {}
    for table, known in COLUMNS.items():
        present = _present(url_a, table)
        columns = [c for c in known if c not in NOT_CONTENT and c in present]
        sql = f"SELECT {', '.join(columns)} FROM {table}"
        tallies = []
        for url in (url_a, url_b):
            per_column: list[Counter[bytes]] = [Counter() for _ in columns]
            for row in _query(url, sql):
                for tally, value in zip(per_column, row, strict=True):
                    tally[_canonical(value)] += 1
            tallies.append(per_column)
        differ = [c for c, x, y in zip(columns, *tallies, strict=True) if x != y]
        if differ:
            found[table] = differ
    return found


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def print_profile(path: Path, limit: int = 30) -> None:
    stats = pstats.Stats(str(path))
    stats.strip_dirs()
    for key in ("cumulative", "tottime"):
        print(f"\n--- importer profile, top {limit} by {key} ({path}) ---")
        stats.sort_stats(key).print_stats(limit)


def prepare_workspace(
    base: Path, scale: dict[str, int], seed: int, layout: str = "eval-magic"
) -> Path:
    """Generate the workspace under `base`, or reuse one generated there with the same scale."""
    suffix = "" if layout == "eval-magic" else f"-{layout}"
    workspace = base / f"workspace{suffix}"
    manifest = base / f"manifest{suffix}.json"
    # A changed generator writes a different tree: its source's hash is part of the key.
    sources = [generate.__file__]
    if layout == "skill-creator":
        sources.append(generate_skill_creator.__file__)
    generator = hashlib.sha256(b"".join(Path(f).read_bytes() for f in sources)).hexdigest()[:16]
    wanted = {**scale, "seed": seed, "generator": generator}
    if workspace.is_dir() and manifest.is_file():
        recorded = json.loads(manifest.read_text())
        if recorded.get("scale") == wanted:
            print(f"workspace: reusing {workspace}")
            return print_workspace(workspace, recorded["counts"], recorded["seconds"])
    shutil.rmtree(workspace, ignore_errors=True)
    start = time.perf_counter()
    if layout == "skill-creator":
        counts = generate_skill_creator_workspace(workspace, seed=seed, **scale)
    else:
        counts = generate_workspace(workspace, seed=seed, **scale)
    seconds = time.perf_counter() - start
    manifest.write_text(json.dumps({"scale": wanted, "counts": counts, "seconds": seconds}))
    # Flush the freshly written files now, or their writeback competes with import (a).
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
    whole = {"other", "benchmark"}
    print(
        "  per run: "
        + ", ".join(f"{k} {v:.1f} KB" for k, v in per_run.items() if k not in whole)
        + f"  ({workspace})"
    )
    if "benchmark" in counts["bytes_by_kind"]:
        print(f"  benchmark.json: {counts['bytes_by_kind']['benchmark'] / 2**20:.1f} MB")
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


@dataclass
class Setup:
    """One database kind's measurement: where the import and the floor write."""

    kind: str
    layout: str
    url_a: str = ""
    url_b: str = ""


def run_floor(layout: str, workspace: Path, url: str) -> list[str]:
    target = floor_target(url)
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
    parser.add_argument("--layout", choices=LAYOUTS, default="eval-magic")
    parser.add_argument("--database", choices=(*DATABASES, "both"), default="sqlite")
    for name in FULL:
        parser.add_argument(
            f"--{name}",
            type=int,
            default=None,
            help=f"default {FULL[name]}"
            + (
                f" (skill-creator {SKILL_CREATOR_FULL[name]})" if name in SKILL_CREATOR_FULL else ""
            ),
        )
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
    if args.layout == "skill-creator":
        full, quick = SKILL_CREATOR_FULL, SKILL_CREATOR_QUICK
        if args.skills or args.iterations:
            parser.error("--skills and --iterations are eval-magic's: skill-creator has one")
    else:
        full, quick = FULL, QUICK
    scale = {k: getattr(args, k) or (quick if args.quick else full)[k] for k in full}
    kinds = DATABASES if args.database == "both" else (args.database,)

    # Unwind like Ctrl-C on SIGTERM, so the PostgreSQL databases are dropped all the same.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    base = (args.keep or Path(tempfile.mkdtemp(prefix="evalsite-bench-"))).resolve()
    base.mkdir(parents=True, exist_ok=True)
    try:
        print(f"evalsite import benchmark ({args.layout}), {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
        print(f"git HEAD: {git_head()}")
        print(f"machine: {machine()}")
        workspace = prepare_workspace(base, scale, args.seed, args.layout)
        peer = args.layout == "skill-creator"
        all_oks = []
        for kind in kinds:
            print(f"\n=== {server_version(kind)} ===")
            print(f"before measuring: {load_note()}")
            setup = Setup(kind, args.layout)
            with databases(kind, base) as pool:
                rounds = []
                for _ in range(max(args.repeat, 1)):
                    measured, notes = measure_round(workspace, base, pool, setup)
                    rounds.append(measured)
                compare = args.compare or args.layout == "skill-creator"
                oks = report(rounds, setup, notes, compare=compare)
                all_oks += oks
                if peer:
                    # Each round: the peer, then evalsite, back to back, so that both see
                    # the same machine (other processes' load moves both).
                    views = []
                    for _ in range(max(args.repeat, 1)):
                        peer_round = measure_peer(workspace, base)
                        url = pool.fresh("view")
                        log = base / f"gunicorn-{kind}.log"
                        view = measure_first_view(
                            MANAGE, workspace, url=url, env=django_env(url), log=log
                        )
                        views.append((peer_round, view))
                    all_oks.append(report_first_view(views))
                print(f"after measuring: {load_note()}")
                if args.profile:
                    profile = args.profile.resolve()
                    if len(kinds) > 1:
                        profile = profile.with_name(f"{profile.stem}-{kind}{profile.suffix}")
                    profile_import(workspace, pool.fresh("profile"), profile)
        if args.quick or scale != full:
            print("(the targets are set for the full scale; fixed start-up costs weigh more here)")
        return 1 if args.check and not all(all_oks) else 0
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


@dataclass
class Peer:
    """skill-creator's own tools over the same iteration (bench/peer_skill_creator.py)."""

    aggregate: float
    review: float
    #: Their CPU time (this process's, user + system).
    cpu: float
    page_bytes: int

    @property
    def total(self) -> float:
        return self.aggregate + self.review


def measure_peer(workspace: Path, base: Path) -> Peer:
    """The peer's aggregate and review over the workspace, one after the other."""
    cpu = time.process_time()
    aggregate = aggregate_like_skill_creator(workspace, base / "aggregated.json")
    review, page = review_like_skill_creator(workspace, base / "review.html")
    (base / "review.html").unlink(missing_ok=True)
    return Peer(aggregate, review, time.process_time() - cpu, page)


def report_first_view(rounds: list[tuple[Peer, FirstView]]) -> bool:
    """Print folder -> first view beside the peer's aggregate + review measured just before
    it (the round with the lowest ratio); whether it is below the peer's."""
    peer, best = min(rounds, key=lambda r: r[1].folder_to_first_view / r[0].total)
    ratio = best.folder_to_first_view / peer.total
    exact = best.documents == best.runs and best.pending == 0
    of = f", best of {len(rounds)} rounds" if len(rounds) > 1 else ""
    print(
        f"\nfolder -> first view, beside the peer (skill-creator) just before it{of}:\n"
        f"  peer: aggregate_benchmark.py's work (json.load of every grading.json and "
        f"timing.json, statistics, benchmark.json written) {peer.aggregate:.2f} s + "
        f"generate_review.py --static's work (every run's outputs and grading in one page of "
        f"{peer.page_bytes / 2**20:.0f} MB) {peer.review:.2f} s = {peer.total:.2f} s "
        f"({peer.cpu:.2f} s CPU)\n"
        f"  evalsite: import committed after {best.committed:.2f} s ({best.committed_cpu:.2f} s "
        f"CPU, start-up included), then the iteration page's first view "
        f"{best.view * 1000:.0f} ms ({best.size / 1024:.0f} KB) = "
        f"{best.folder_to_first_view:.2f} s\n"
        f"  the import's process ended after {best.finished:.2f} s (search index built after "
        f"the commit): {best.documents:,} documents for {best.runs:,} runs, "
        f"{best.pending} iteration(s) still pending{'' if exact else '  !! not exact'}"
    )
    ok = ratio < 1 and exact
    cpu_ratio = best.committed_cpu / peer.cpu
    print(
        f"  folder -> first view / peer aggregate + review = {ratio:.2f}x "
        f"(CPU to the commit / peer CPU {cpu_ratio:.2f}x)   target < 1x  {verdict(ok)}"
    )
    return ok


def profile_import(workspace: Path, db: str, out: Path) -> None:
    """cProfile one more import into a fresh database, and print its hot spots."""
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
