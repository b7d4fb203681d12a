"""Skill-page statistics benchmark: `trend_points` against one GROUP BY query as the floor.

    python bench/stats_bench.py [--database sqlite|postgres|both] [--iterations 20 --evals 30
                                --runs 3 --assertions 6] [--repeat 100] [--keep DIR]
                                [--profile] [--check]

One skill of the import bench's workspace, imported into a fresh database (untimed); then,
warm and interleaved in a Django subprocess, `runs.reading.skill.trend_points(skill)` (all the
skill page's charts need) and the floor, one raw query of per-(iteration, condition, eval)
sums that no computation of those figures can read less than. Target: median <= 3x the
floor's, on each database. The exit status is 0 (a report) unless --check and a miss.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))  # run as a script: make `bench` importable

from bench.databases import DATABASES, empty_database  # noqa: E402
from bench.django_process import django_env, load_workspaces  # noqa: E402
from bench.reporting import load_note, percentile, print_header, verdict  # noqa: E402
from bench.workspaces import prepare_workspace, working_folder  # noqa: E402

FULL = {"skills": 1, "iterations": 20, "evals": 30, "runs": 3, "assertions": 6}
TARGET_RATIO = 3.0

#: The floor: what any computation of the skill page's statistics has to read, at least.
FLOOR_SQL = """
SELECT r.iteration_id, c.name, r.eval_id,
       SUM(g.passed) AS passes, SUM(g.pass_rate) AS pass_rate_sum, COUNT(*) AS runs
FROM runs_run r
JOIN runs_condition c ON c.id = r.condition_id
JOIN runs_grading g ON g.run_id = r.id
WHERE r.iteration_id IN (SELECT id FROM runs_iteration WHERE skill_id = %s)
GROUP BY r.iteration_id, c.name, r.eval_id
"""


# --- the measurement, inside a Django subprocess ----------------------------------------


def measure(repeat: int, profile: bool) -> dict[str, Any]:
    """Time trend_points and the floor query, interleaved, `repeat` times each (warm)."""
    import django

    django.setup()
    from django.db import connection

    from runs.models import Skill
    from runs.reading.skill import trend_points

    skill = Skill.objects.order_by("name").first()
    if skill is None:
        raise SystemExit("no skill in the database: did the import fail?")

    def floor() -> list[tuple[Any, ...]]:
        with connection.cursor() as cursor:
            cursor.execute(FLOOR_SQL, [skill.pk])
            return cursor.fetchall()

    def timed(fn: Any) -> tuple[float, Any]:
        start = time.perf_counter()
        result = fn()
        return (time.perf_counter() - start) * 1000, result

    for _ in range(5):  # warm: caches, prepared plans, imported modules
        trend_points(skill)
        floor()
    trend_ms, floor_ms = [], []
    for i in range(repeat):
        # Alternate which goes first, so neither always runs on the other's warm caches.
        pair = (("trend", lambda: trend_points(skill)), ("floor", floor))
        for name, fn in pair if i % 2 == 0 else pair[::-1]:
            ms, _ = timed(fn)
            (trend_ms if name == "trend" else floor_ms).append(ms)

    points, summaries = trend_points(skill)
    rows = floor()
    result = {
        "vendor": connection.vendor,
        "server": _server_version(connection),
        "skill": skill.name,
        "trend_ms": trend_ms,
        "floor_ms": floor_ms,
        "points": len(points),
        "floor_rows": len(rows),
        "mismatches": _mismatches(summaries, rows),
        "queries": _query_breakdown(lambda: trend_points(skill)),
    }
    if profile:
        result["profile"] = _profile(lambda: trend_points(skill))
    return result


def _server_version(connection: Any) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SHOW server_version")
            return "PostgreSQL " + cursor.fetchone()[0].split()[0]
        cursor.execute("SELECT sqlite_version()")
        return "SQLite " + cursor.fetchone()[0]


def _mismatches(summaries: list[Any], rows: list[tuple[Any, ...]]) -> int:
    """Cells whose per-eval score differs between trend_points and the floor (should be 0)."""
    floor = {(it, cond, ev): rate_sum / runs for it, cond, ev, _, rate_sum, runs in rows}
    ours = {
        (s.iteration.pk, c.name, ev): score
        for s in summaries
        for c in s.conditions
        if c.score
        for ev, score in c.score.per_eval.items()
    }
    if floor.keys() != ours.keys():
        return len(floor.keys() ^ ours.keys())
    return sum(1 for k, v in floor.items() if abs(v - ours[k]) > 1e-9)


def _query_breakdown(fn: Any) -> list[tuple[str, float]]:
    """The queries one call of `fn` makes, each with its execute time in ms."""
    from django.db import connection

    timings: list[tuple[str, float]] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            timings.append((sql, (time.perf_counter() - start) * 1000))

    with connection.execute_wrapper(wrapper):
        fn()
    return timings


def _profile(fn: Any, calls: int = 10, limit: int = 18) -> str:
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    for key in ("cumulative", "tottime"):
        out.write(f"--- trend_points x {calls}, top {limit} by {key} ---\n")
        stats.sort_stats(key).print_stats(limit)
    return out.getvalue()


# --- the parent: workspace, databases, report -------------------------------------------


def run_database(kind: str, workspace: Path, base: Path, args: argparse.Namespace) -> dict:
    print(f"\n[{kind}]")
    with empty_database(kind, base, "stats") as url:
        # The target is for computing the figures, not for reading them from the cache.
        env = django_env(url, EVALSITE_CACHE="off")
        load_workspaces([workspace], env)
        out = base / f"stats-{kind}.json"
        command = [sys.executable, __file__, "--worker", str(out), "--repeat", str(args.repeat)]
        if args.profile:
            command.append("--profile")
        proc = subprocess.run(command, cwd=PROJECT, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            # Report it and go on with the other database rather than lose its figures.
            error = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["(no output)"]
            print(f"  the measuring subprocess failed (exit {proc.returncode}): {error[0]}")
            print("\n".join(f"    {line}" for line in proc.stderr.strip().splitlines()[-15:]))
            return {"error": error[0]}
        return json.loads(out.read_text())


def report(results: dict[str, dict], *, profile: bool) -> list[bool]:
    """Print the figures and verdicts of every database; the verdicts."""
    oks = []
    print(
        f"\n{'database':<18}{'trend_points ms':>18}{'floor ms':>16}"
        f"{'ratio':>8}{'p95 ratio':>11}  target   verdict"
    )
    print(f"{'':<18}{'median    p95':>18}{'median   p95':>16}")
    for kind, r in results.items():
        if "error" in r:
            oks.append(False)
            print(f"{kind:<18}{'no figures: ' + r['error'][:60]:<53}  {verdict(False)}")
            continue
        t, f = r["trend_ms"], r["floor_ms"]
        t50, t95, f50, f95 = (
            statistics.median(t),
            percentile(t, 0.95),
            statistics.median(f),
            percentile(f, 0.95),
        )
        ratio = t50 / f50
        ok = ratio <= TARGET_RATIO
        oks.append(ok)
        print(
            f"{r['server']:<18}{t50:>9.1f}{t95:>9.1f}{f50:>8.2f}{f95:>8.2f}"
            f"{ratio:>7.1f}x{t95 / f95:>10.1f}x  <= {TARGET_RATIO:g}x   {verdict(ok)}"
        )
    for kind, r in results.items():
        if "error" in r:
            continue
        print(
            f"\n{kind}: skill {r['skill']}, {r['points']} trend points, {r['floor_rows']:,} "
            f"floor rows, {len(r['trend_ms'])} timed calls of each; per-eval scores that "
            f"differ from the floor's: {r['mismatches']}"
        )
        print("  queries of one trend_points call (execute time):")
        for sql, ms in r["queries"]:
            text = " ".join(sql.split())
            print(f"    {ms:7.2f} ms  {text[:100]}{'…' if len(text) > 100 else ''}")
        if profile and "profile" in r:
            print(r["profile"])
    return oks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=(*DATABASES, "both"), default="both")
    for name in ("iterations", "evals", "runs", "assertions"):
        parser.add_argument(f"--{name}", type=int, default=FULL[name])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=100, help="timed calls of each")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="work in DIR and keep it")
    parser.add_argument("--profile", action="store_true", help="also cProfile trend_points")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        args.worker.write_text(json.dumps(measure(max(args.repeat, 1), args.profile)))
        return 0

    # Unwind like Ctrl-C on SIGTERM, so the PostgreSQL database is dropped all the same.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    scale = {**FULL, **{k: getattr(args, k) for k in FULL if k != "skills"}}
    with working_folder(args.keep, "evalsite-stats-bench-") as base:
        print_header("statistics benchmark")
        workspace = prepare_workspace(base, scale, args.seed)
        kinds = DATABASES if args.database == "both" else (args.database,)
        results = {}
        for kind in kinds:
            print(f"before measuring: {load_note()}")
            results[kind] = run_database(kind, workspace, base, args)
        oks = report(results, profile=args.profile)
        print(f"\nafter measuring: {load_note()}")
        if scale != FULL:
            print("(the target is set for the default scale)")
        return 1 if args.check and not all(oks) else 0


if __name__ == "__main__":
    sys.exit(main())
