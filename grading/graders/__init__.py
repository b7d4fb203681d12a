"""Graders for runevals and regrading (SPEC §6): pure Python, no database.

Each grader takes plain data — run.json as a mapping, the assertion from evals.json, the
run's task folder — and returns the assertion result grading.json wants
(`{id, passed, evidence, confidence, grader}`), with the side record eval-magic keeps
beside it where there is one. `grade_run` grades a whole run.
"""

from __future__ import annotations

from .command import command_check, command_environment, matrix_cells
from .diff import DiffError, DiffMeasurement, diff_scope, measure_diff
from .expectations import case_assertions, judge_assertions, slugify, unique_slugs
from .grade import grade_run, summarise
from .judge import JudgeOutcome, JudgeUnavailable, llm_judge
from .meta import skill_check_applies, skill_invoked_check
from .rustregex import RustRegexError, compile_rust_regex, rust_search, translate
from .transcript import render_invocation, transcript_check

__all__ = [
    "DiffError",
    "DiffMeasurement",
    "JudgeOutcome",
    "JudgeUnavailable",
    "RustRegexError",
    "case_assertions",
    "command_check",
    "command_environment",
    "compile_rust_regex",
    "diff_scope",
    "grade_run",
    "judge_assertions",
    "llm_judge",
    "matrix_cells",
    "measure_diff",
    "render_invocation",
    "rust_search",
    "skill_check_applies",
    "skill_invoked_check",
    "slugify",
    "summarise",
    "transcript_check",
    "translate",
    "unique_slugs",
]
