"""Search and transcript benchmark: the import bench's workspace searched, a 2,000-event
transcript rendered.

    python bench/search_bench.py [--database sqlite|postgres|both] [--quick] [--keep DIR]
                                 [--repeat 30] [--check]

On each database: the workspace and a `long-transcript` skill imported (timed, as the import
writes the search index) and imported again, then, in-process with the test client, each
query of QUERIES through the search page and the transcript fragment (first view after a new
generation, nothing cached, cached); last, the index is checked exact. Targets: search p95
<= 200 ms for every query; fragment p95 <= 250 ms as the first view after a new generation.
The exit status is 0 (a report) unless --check is given and a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))  # run as a script: make `bench` importable

from bench.databases import DATABASES, databases, server_version  # noqa: E402
from bench.django_process import MANAGE, django_env  # noqa: E402
from bench.generate import generate_workspace  # noqa: E402
from bench.workspaces import FULL, QUICK  # noqa: E402

TARGET_SEARCH_MS = 200
TARGET_FRAGMENT_MS = 250
TRANSCRIPT_EVENTS = 2_000
#: (label, query string): a common word, a word no run has (what a rare word costs: the
#: generator's ~70 words are in every run), a phrase, a prefix, an exclusion, and filters.
#: `{phrase}` is replaced by words from one run's final message.
QUERIES = (
    ("common word", "q=agent"),
    ("a word no run has", "q=zyzzyva"),
    ("two words", "q=worktree+rollback"),
    ("phrase from a final message", "q={phrase}"),
    ("prefix", "q=pagin*"),
    ("exclusion", "q=migration+-cache"),
    ("skill, iteration, failed", "q=agent&iteration={latest}&outcome=fail"),
    ("site-wide, condition", "q=verify+evidence&condition=without_skill"),
)


def write_long_transcript(root: Path, events: int = TRANSCRIPT_EVENTS) -> None:
    """`root/long-transcript/iteration-1/`: one run whose conversation has `events` events."""
    folder = root / "long-transcript" / "iteration-1"
    run = folder / "eval-long" / "with_skill"
    run.mkdir(parents=True, exist_ok=True)
    conditions = {
        "mode": "new-skill",
        "conditions": [
            {"name": "with_skill", "skill_path": "/s", "staged_skill_slug": "long-with_skill"}
        ],
        "timestamp": "2026-01-01T00:00:00Z",
        "harness": "claude-code",
        "runs": 1,
        "agent_model": "m",
        "judge_model": "m",
        "label": "long",
    }
    conversation = []
    for ordinal in range(events):
        if ordinal % 2:
            conversation.append(
                {
                    "type": "tool_invocation",
                    "ordinal": ordinal,
                    "round": 1,
                    "name": "Bash" if ordinal % 4 == 1 else "Read",
                    "args": {"command": f"pytest -q tests/test_{ordinal}.py"},
                    "result": f"line {ordinal}: passed\n" * (6 if ordinal % 10 else 400),
                }
            )
        else:
            text = f"Step {ordinal}: the **tests** for `module_{ordinal}` pass; next:\n\n- one"
            conversation.append(
                {"type": "assistant_message", "ordinal": ordinal, "round": 1, "text": text}
            )
    conversation[0] = {"type": "user_message", "ordinal": 0, "round": 1, "text": "Go."}
    record = {
        "eval_id": "long",
        "condition": "with_skill",
        "skill_path": "/s",
        "prompt": "Go.",
        "files": [],
        "final_message": "Done.",
        "tool_invocations": [
            {k: e[k] for k in ("name", "args", "ordinal", "result")}
            for e in conversation
            if e["type"] == "tool_invocation"
        ],
        "total_tokens": None,
        "duration_ms": None,
    }
    (folder / "conditions.json").write_text(json.dumps(conditions))
    (run / "run.json").write_text(json.dumps(record))
    (run / "conversation.json").write_text(
        json.dumps({"status": "completed", "delivered_followups": 0, "events": conversation})
    )


def percentile(values: list[float], fraction: float) -> float:
    """The value at rank `fraction` x (n - 1): this bench's recorded figures use this rule,
    not the nearest rank of bench/reporting.py."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


# --- the child: measures on one database, in-process -------------------------------------


def measure(repeat: int) -> dict[str, Any]:
    import django

    django.setup()
    from django.conf import settings
    from django.test.utils import override_settings

    # Pages are rendered in this process, without `collectstatic`: plain static URLs.
    plain = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
    with override_settings(STORAGES={**settings.STORAGES, "staticfiles": plain}):
        return _measure(repeat)


def _measure(repeat: int) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client

    from runs.models import Generation, Run, Skill
    from runs.search.models import SearchDocument

    client = Client()
    client.force_login(get_user_model().objects.create_user("bench-search"))
    skill = Skill.objects.exclude(name="long-transcript").order_by("name").first()
    final = Run.objects.filter(iteration__skill=skill).values_list("final_message", flat=True)[0]
    phrase = '"' + " ".join(final.split()[3:8]).replace('"', "") + '"'
    out: dict[str, Any] = {"search": {}, "documents": SearchDocument.objects.count()}
    latest = skill.iterations.order_by("-number").values_list("number", flat=True)[0]
    for label, query in QUERIES:
        query = query.replace("{phrase}", phrase.replace(" ", "+"))
        query = query.replace("{latest}", str(latest))
        site = label.startswith("site-wide")
        url = "/search/" if site else f"/skills/{skill.name}/search/"
        api = "/api/search" if site else f"/api/skills/{skill.name}/search"
        count = client.get(f"{api}?{query}&limit=1").json()["count"]
        times = []
        for _ in range(repeat + 2):
            start = time.perf_counter()
            response = client.get(f"{url}?{query}")
            times.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200, response.content[:300]
            assert b"<mark>" in response.content or not count, response.content[-2000:]
        times = times[2:]  # warm-up
        out["search"][label] = {
            "query": query,
            "matches": count,
            "p50": statistics.median(times),
            "p95": percentile(times, 0.95),
        }
    run = Run.objects.get(iteration__skill__name="long-transcript")
    url = run.get_absolute_url() + "conversation/"
    timings: dict[str, list[float]] = {"first": [], "empty": [], "cached": []}
    for _ in range(max(5, repeat // 3)):
        for kind in ("empty", "first", "cached"):
            if kind != "cached":
                Generation.objects.bump()  # as an import or a review does
            if kind == "empty":
                cache.clear()  # nothing cached at all: every message's Markdown parsed too
            start = time.perf_counter()
            response = client.get(url, HTTP_HX_REQUEST="true")
            timings[kind].append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200
    out["fragment"] = {
        "events": run.conversation_events,
        "bytes": len(response.content),
        **{f"{kind}_p50": statistics.median(values) for kind, values in timings.items()},
        **{f"{kind}_p95": percentile(values, 0.95) for kind, values in timings.items()},
    }
    out["runs"] = Run.objects.count()
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO search_fts(search_fts, rank) VALUES ('integrity-check', 1)")
        out["integrity"] = "FTS5 integrity-check passed"
    else:
        out["integrity"] = "every document has its vector: " + str(
            not SearchDocument.objects.filter(vector__isnull=True).exists()
        )
    return out


# --- the parent ---------------------------------------------------------------------------


def timed_import(url: str, workspace: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, str(MANAGE), "importworkspace", str(workspace), "--verbosity", "0"],
        cwd=PROJECT,
        env=django_env(url),
        check=True,
    )
    return time.perf_counter() - start


def bench_database(kind: str, base: Path, workspace: Path, repeat: int) -> dict[str, Any]:
    with databases(kind, base) as pool:
        url = pool.fresh("search")
        imported = timed_import(url, workspace)
        reimported = timed_import(url, workspace)
        env = {**django_env(url), "ALLOWED_HOSTS": "testserver"}
        child = subprocess.run(
            [sys.executable, __file__, "--measure", "--repeat", str(repeat)],
            cwd=PROJECT,
            env=env,
            capture_output=True,
            text=True,
        )
        if child.returncode:
            raise SystemExit(f"measuring on {kind} failed:\n{child.stderr[-3000:]}")
        result = json.loads(child.stdout.strip().splitlines()[-1])
    result.update(import_seconds=imported, reimport_seconds=reimported, server=server_version(kind))
    return result


def report(kind: str, result: dict[str, Any]) -> bool:
    met = True
    print(f"\n{kind}: {result['server']}, {result['runs']:,} runs, {result['documents']:,} docs")
    imported, again = result["import_seconds"], result["reimport_seconds"]
    print(f"  import {imported:.1f} s, re-import {again:.1f} s")
    print(f"  {result['integrity']}")
    print(f"  {'search':<30} {'matches':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for label, figures in result["search"].items():
        ok = figures["p95"] <= TARGET_SEARCH_MS
        met &= ok
        print(
            f"  {label:<30} {figures['matches']:>8,} {figures['p50']:>8.1f} "
            f"{figures['p95']:>8.1f}{'' if ok else '  target missed'}"
        )
    fragment = result["fragment"]
    ok = fragment["first_p95"] <= TARGET_FRAGMENT_MS
    met &= ok
    print(
        f"  fragment, {fragment['events']} events, {fragment['bytes'] / 1e6:.1f} MB: first view "
        f"after a new generation p50 {fragment['first_p50']:.0f} / p95 "
        f"{fragment['first_p95']:.0f} ms{'' if ok else '  target missed'}; nothing cached "
        f"{fragment['empty_p50']:.0f} / {fragment['empty_p95']:.0f} ms; cached "
        f"{fragment['cached_p50']:.1f} / {fragment['cached_p95']:.1f} ms"
    )
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", choices=[*DATABASES, "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="a small workspace, in seconds")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="work in DIR and keep it")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
        print(json.dumps(measure(args.repeat)))
        return 0
    base = (args.keep or Path(tempfile.mkdtemp(prefix="evalsite-search-bench-"))).resolve()
    workspace = base / "workspace"
    if not (workspace / "long-transcript").is_dir():
        scale = QUICK if args.quick else FULL
        print(f"generating {scale} in {workspace} …", flush=True)
        generate_workspace(workspace, **scale)
        write_long_transcript(workspace)
    load = os.getloadavg()
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load {load[0]:.1f} {load[1]:.1f}")
    kinds = DATABASES if args.database == "both" else (args.database,)
    met = True
    for kind in kinds:
        met &= report(kind, bench_database(kind, base, workspace, args.repeat))
    print(f"\nload after: {os.getloadavg()[0]:.1f}")
    return 0 if met or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
