"""Trigger evals (`runevals --triggers`, SPEC §3.5): does a description make the agent load
its skill?

plan.py reads each skill folder's trigger set, the descriptions to test and the siblings to
stage beside it, and splits the queries for a holdout; play.py plays every description ×
query × run as a fresh session of a harness (the skill staged as a project skill) and reads
which skill the turn loaded (`evaluating.skillcalls`); results.py writes skill-creator's
run_eval shape with evalsite's fields; workflow.py is the one entry runevals calls, which
also imports what it wrote.
"""
