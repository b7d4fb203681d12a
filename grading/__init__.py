"""Grading: evalsite's side that plays, grades and reviews runs (gradings' tables are runs').

`evaluating/` runs a skill's evals through a harness (`messages/`, `claude_code/`),
`graders/` decides each assertion, `sandbox/` isolates what an agent or an eval runs,
`campaigns/` is runevals' workflow and its queue, `regrading/` grades imported runs again,
and reviewing.py records people's notes and overrides. Imports run grading → runs → accounts.
"""
