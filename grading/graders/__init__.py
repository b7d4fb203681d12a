"""Graders for runevals and regrading (SPEC §6): pure Python, no database.

Each grader takes plain data — run.json as a mapping, the assertion from evals.json, the
run's task folder — and returns a `verdict.Verdict` (`as_json()` is the assertion result
grading.json wants: `{id, passed, evidence, confidence, grader}`), with the side record
eval-magic keeps beside it where there is one. `grade.GRADERS` maps each assertion kind to
its grader; `grade.grade_run` grades a whole run.

Import the modules themselves (`grading.graders.grade`, `.transcript`, …): this package
re-exports nothing, so that a caller needing one grader does not load the Anthropic SDK
that `judge` needs. An eval's assertions are normalised by `runs.case_assertions`.
"""
