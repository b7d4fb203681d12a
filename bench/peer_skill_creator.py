"""What skill-creator's own tools do with an iteration, as yard sticks for the import bench.

skill-creator ends an iteration with two scripts: `scripts/aggregate_benchmark.py` (the
figures) and `eval-viewer/generate_review.py --static` (one HTML page embedding every run,
what a reviewer opens). The functions here do the same work over the same files with the
standard library, as those scripts do: each reads, parses and writes what its script does,
so that the bench can set evalsite's "folder to first view" beside the peer's "aggregate
plus review", measured in the same run on the same machine. They are not the scripts
themselves (the bench does not download them); their steps are listed in each docstring.
"""

from __future__ import annotations

import base64
import json
import math
import mimetypes
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.floor_skill_creator import find_iterations

#: generate_review.py's choices: which output files it inlines as text, which it leaves out.
REVIEW_TEXT_SUFFIXES = {
    ".txt", ".md", ".json", ".csv", ".py", ".js", ".ts", ".tsx", ".jsx", ".yaml", ".yml",
    ".xml", ".html", ".css", ".sh", ".rb", ".go", ".rs", ".java", ".c", ".cpp", ".h", ".hpp",
    ".sql", ".r", ".toml",
}  # fmt: skip
REVIEW_LEFT_OUT = {"transcript.md", "user_notes.md", "metrics.json"}
REVIEW_SKIPPED_DIRS = {"node_modules", ".git", "__pycache__", "skill", "inputs"}
#: The viewer page the data is embedded in (skill-creator's is ~40 KB of HTML and script;
#: its size does not move the figure).
REVIEW_TEMPLATE = "<!doctype html><title>review</title><script>/*__DATA__*/</script>"


def aggregate_like_skill_creator(root: Path, out: Path) -> float:
    """Seconds for what skill-creator's own aggregator does with the same iterations.

    Its `aggregate_benchmark.py` json.loads every run's grading.json and timing.json, keeps
    each run's figures, expectations and notes, computes mean/stddev/min/max per
    configuration and writes benchmark.json (indent 2). This does the same work, as a yard
    stick for the issue's "8x the aggregator"; it is not a target.
    """
    start = time.perf_counter()
    for _, folder in find_iterations(root):
        runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for eval_dir in sorted(folder.glob("eval-*")):
            for config_dir in sorted(p for p in eval_dir.iterdir() if p.is_dir()):
                for run_dir in sorted(config_dir.glob("run-*")):
                    grading = json.loads((run_dir / "grading.json").read_text())
                    timing = json.loads((run_dir / "timing.json").read_text())
                    summary = grading.get("summary", {})
                    notes = grading.get("user_notes_summary", {})
                    runs[config_dir.name].append(
                        {
                            "eval": eval_dir.name,
                            "run_number": int(run_dir.name.split("-")[1]),
                            "pass_rate": summary.get("pass_rate", 0.0),
                            "time_seconds": grading.get("timing", {}).get(
                                "total_duration_seconds", 0.0
                            ),
                            "tokens": timing.get("total_tokens", 0),
                            "expectations": grading.get("expectations", []),
                            "notes": [
                                *notes.get("uncertainties", []),
                                *notes.get("workarounds", []),
                            ],
                        }
                    )
        summary = {
            config: {
                key: _spread([r[key] for r in entries])
                for key in ("pass_rate", "time_seconds", "tokens")
            }
            for config, entries in runs.items()
        }
        with open(out, "w") as handle:
            json.dump({"runs": runs, "run_summary": summary}, handle, indent=2)
    return time.perf_counter() - start


def _spread(values: list[float]) -> dict[str, float]:
    mean = sum(values) / len(values)
    variance = sum((x - mean) ** 2 for x in values) / max(len(values) - 1, 1)
    return {"mean": mean, "stddev": math.sqrt(variance), "min": min(values), "max": max(values)}


def review_like_skill_creator(root: Path, out: Path) -> tuple[float, int]:
    """(seconds, bytes written) for what `generate_review.py ITERATION --static OUT
    --benchmark ITERATION/benchmark.json` does with each iteration under `root`.

    It walks the folder for run folders (those holding `outputs/`, sorted, some folders
    skipped); per run it reads the prompt from an `eval_metadata.json` in the run folder or
    its parent (else `transcript.md`), reads each output file (text inlined, anything else
    base64-encoded) and json.loads the run's `grading.json`; then it json.loads the
    benchmark, json.dumps all of it, escapes `<`, `>`, `&` and the line separators, puts it
    into the viewer page and writes the page.
    """
    start = time.perf_counter()
    written = 0
    for _, folder in find_iterations(root):
        runs: list[dict[str, Any]] = []
        _find_review_runs(folder, folder, runs)
        runs.sort(key=lambda r: (r["eval_id"] is None, r["eval_id"] or 0, r["id"]))
        embedded: dict[str, Any] = {"skill_name": folder.parent.name, "runs": runs}
        if (folder / "benchmark.json").is_file():
            embedded["benchmark"] = json.loads((folder / "benchmark.json").read_text())
        data = (
            json.dumps(embedded)
            .replace("<", "\\u003c")
            .replace(">", "\\u003e")
            .replace("&", "\\u0026")
            .replace("\u2028", "\\u2028")
            .replace("\u2029", "\\u2029")
        )
        page = REVIEW_TEMPLATE.replace("/*__DATA__*/", f"const EMBEDDED_DATA = {data};")
        written += out.write_text(page)
    return time.perf_counter() - start, written


def _find_review_runs(root: Path, current: Path, runs: list[dict[str, Any]]) -> None:
    if (current / "outputs").is_dir():
        runs.append(_review_run(root, current))
        return
    for child in sorted(current.iterdir()):
        if child.is_dir() and child.name not in REVIEW_SKIPPED_DIRS:
            _find_review_runs(root, child, runs)


def _review_run(root: Path, run_dir: Path) -> dict[str, Any]:
    prompt, eval_id = "", None
    for candidate in (run_dir / "eval_metadata.json", run_dir.parent / "eval_metadata.json"):
        if candidate.exists():
            metadata = json.loads(candidate.read_text())
            prompt, eval_id = metadata.get("prompt", ""), metadata.get("eval_id")
            if prompt:
                break
    if not prompt:
        for candidate in (run_dir / "transcript.md", run_dir / "outputs" / "transcript.md"):
            if candidate.exists():
                found = re.search(r"## Eval Prompt\n\n([\s\S]*?)(?=\n##|$)", candidate.read_text())
                prompt = found.group(1).strip() if found else ""
                if prompt:
                    break
    outputs = [
        _embedded(f)
        for f in sorted((run_dir / "outputs").iterdir())
        if f.is_file() and f.name not in REVIEW_LEFT_OUT
    ]
    grading = None
    for candidate in (run_dir / "grading.json", run_dir.parent / "grading.json"):
        if candidate.exists():
            grading = json.loads(candidate.read_text())
            if grading:
                break
    return {
        "id": str(run_dir.relative_to(root)).replace("/", "-"),
        "prompt": prompt or "(No prompt found)",
        "eval_id": eval_id,
        "outputs": outputs,
        "grading": grading,
    }


def _embedded(path: Path) -> dict[str, Any]:
    if path.suffix.lower() in REVIEW_TEXT_SUFFIXES:
        return {"name": path.name, "type": "text", "content": path.read_text(errors="replace")}
    mime = mimetypes.guess_type(str(path))[0] or "application/octet-stream"
    encoded = base64.b64encode(path.read_bytes()).decode("ascii")
    return {"name": path.name, "type": "binary", "data_uri": f"data:{mime};base64,{encoded}"}
