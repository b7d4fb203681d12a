"""Test helpers: the real slow-powers baselines, read in place from ../shared, and the schema."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from runs.stats import AssertionOutcome, RunSample, outcomes_from_grading, run_sample_from_grading

REPO_ROOT = Path(__file__).resolve().parents[3]
REAL_SKILLS = (REPO_ROOT / "../shared/fixtures/real/slow-powers").resolve()
SCHEMA_PATH = REPO_ROOT / "schemas" / "benchmark.schema.json"
GRADING_NAME = re.compile(r"(?P<eval>.+?)__(?P<condition>.+?)(?:__r(?P<run>\d+))?\.json")


def real_skill_dirs() -> list[Path]:
    """Return the real skills with a promoted baseline, [] where ../shared is absent."""
    if not REAL_SKILLS.is_dir():
        return []
    return sorted(p for p in REAL_SKILLS.iterdir() if (p / "evals" / "baseline").is_dir())


def real_skill_params() -> list[Any]:
    """Return pytest params for the real skills, or one param that skips."""
    dirs = real_skill_dirs()
    if not dirs:
        return [pytest.param(None, marks=pytest.mark.skip(reason="../shared is absent"))]
    return [pytest.param(d, id=d.name) for d in dirs]


def load_baseline(
    skill_dir: Path,
) -> tuple[dict[str, Any], list[RunSample], list[AssertionOutcome]]:
    """Return the recorded benchmark.json, the runs and the outcomes of a baseline's gradings."""
    baseline = skill_dir / "evals" / "baseline"
    recorded = json.loads((baseline / "benchmark.json").read_text())
    runs: list[RunSample] = []
    outcomes: list[AssertionOutcome] = []
    for path in sorted((baseline / "grading").glob("*.json")):
        match = GRADING_NAME.fullmatch(path.name)
        assert match, path.name
        cell = {
            "eval_id": match["eval"],
            "condition": match["condition"],
            "run_index": int(match["run"] or 1),
        }
        grading = json.loads(path.read_text())
        runs.append(run_sample_from_grading(grading, **cell))
        outcomes.extend(outcomes_from_grading(grading, **cell))
    return recorded, runs, outcomes


def should_trigger(skill_dir: Path) -> dict[str, bool | None]:
    """Return eval id → skill_should_trigger from the skill's evals.json."""
    evals = json.loads((skill_dir / "evals" / "evals.json").read_text())["evals"]
    return {e["id"]: e.get("skill_should_trigger") for e in evals}


def skill_loading(conditions: list[str]) -> list[str]:
    """Return the conditions that load a skill (all but without_skill)."""
    return [c for c in conditions if c != "without_skill"]


def benchmark_schema() -> dict[str, Any]:
    """Return evalsite's copy of eval-magic's benchmark schema."""
    return json.loads(SCHEMA_PATH.read_text())
