"""Validity warnings stored as sentences become {code, params, message} (runs.warnings).

Best effort: a sentence evalsite wrote is matched to its code and parameters, and kept so
only if those render it back exactly (the one reworded sentence, the flat run file beside
run folders, is converted all the same). A sentence the source's benchmark.json recorded
becomes "recorded"; anything else "legacy", with its text. Backwards: the sentences.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from django.db import migrations

from runs.warnings import ValidityWarning

BATCH = 500

_INT, _FLOAT = int, float


def _names(text: str) -> list[str]:
    return text.split(", ") if text else []


def _counts(text: str) -> dict[str, int]:
    pairs = (item.rsplit(" ", 1) for item in text.split(", "))
    return {name: int(n) for name, n in pairs}


def _judges(text: str) -> list[str]:
    return [] if text == "no judge asked" else text.removeprefix("judge ").split(", ")


#: (code, the sentence as a pattern, how each named group becomes a parameter).
PATTERNS: list[tuple[str, str, dict[str, Callable[[str], Any]]]] = [
    (
        "unsafe-no-sandbox",
        r"runevals ran this iteration with --unsafe-no-sandbox: what the agents and the "
        r"command checks ran was not contained, and may have read this machine's secrets",
        {},
    ),
    (
        "undeclared-condition",
        r"condition folder (?P<condition>'.*'|\".*\") in (?P<eval_folders>\d+) eval folder\(s\) "
        r"\(first (?P<first>.*)\) is not declared in conditions\.json \((?P<declared>.*)\); "
        r"it was ignored",
        {"condition": ast.literal_eval, "eval_folders": _INT, "declared": _names},
    ),
    (
        "condition-without-runs",
        r"condition (?P<condition>'.*'|\".*\") of conditions\.json has no runs",
        {"condition": ast.literal_eval},
    ),
    (
        "flat-run-file-ignored",
        r"(?P<folder>.*) holds run-<k> folders and a flat (?P<file>[^;]+); the run folders "
        r"were imported(, the flat files| and the flat file) ignored",
        {},
    ),
    ("runs-from-zero", r"(?P<folder>.*): run folders are numbered from run-0", {}),
    ("evals-json-unused", r"(?P<problem>.*) \(not used to link evals\)", {}),
    ("uneven-run-counts", r"uneven run counts on (?P<eval_id>[^:]*): (?P<counts>.*)", {"counts": _counts}),
    (
        "errored-runs",
        r"(?P<n>\d+) run\(s\) errored and are left out of pass rates: (?P<runs>.*?)"
        r"(?: and (?P<unnamed>\d+) more)?",
        {"n": _INT, "runs": _names, "unnamed": _INT},
    ),
    (
        "no-grading",
        r"(?P<n>\d+) run\(s\) have no grading: (?P<runs>.*?)(?: and (?P<unnamed>\d+) more)?",
        {"n": _INT, "runs": _names, "unnamed": _INT},
    ),
    (
        "zero-assertions",
        r"eval\(s\) with zero assertions score 0 in eval-magic's pass rate: (?P<evals>.*)",
        {"evals": _names},
    ),
    (
        "diluted-invocation",
        r"(?P<condition>.*) invoked the skill in (?P<invoked>\d+) of (?P<runs>\d+) run\(s\) "
        r"\((?P<percent>\d+)%\): the comparison is diluted",
        {"invoked": _INT, "runs": _INT, "percent": _FLOAT},
    ),
    (
        "stray-writes",
        r"(?P<run>.*) wrote (?P<count>\d+) file\(s\) outside its task environment \((?P<file>.*)\)",
        {"count": _INT},
    ),
    (
        "guard-denials",
        r"(?P<run>.*): (?P<count>\d+) tool call\(s\) blocked by the write guard \((?P<file>.*)\)",
        {"count": _INT},
    ),
    (
        "harness-refusals",
        r"(?P<run>.*): (?P<count>\d+) tool call\(s\) refused by the harness \((?P<file>.*)\)",
        {"count": _INT},
    ),
    (
        "benchmark-conditions-missing",
        r"recorded benchmark\.json compares (?P<conditions>.*), which are not both in this "
        r"iteration",
        {"conditions": lambda text: text.split(" and ")},
    ),
    (
        "benchmark-disagrees",
        r"recorded benchmark\.json disagrees with the gradings: (?P<problems>.*?)"
        r"(?: \(and (?P<unnamed>\d+) more\))?",
        {"problems": lambda text: text.split("; "), "unnamed": _INT},
    ),
    (
        "skill-creator-mean",
        r"recorded benchmark\.json gives (?P<condition>.*) a mean pass rate of "
        r"(?P<recorded>-?[\d.]+); its runs give (?P<ours>-?[\d.]+)",
        {"recorded": _FLOAT, "ours": _FLOAT},
    ),
    (
        "skill-creator-delta-order",
        r"recorded benchmark\.json's delta (?P<recorded>[+-][\d.]+) is (?P<first>.*) - "
        r"(?P<second>.*) \(skill-creator subtracts in alphabetical order\); evalsite shows "
        r"treatment - control: (?P<treatment>.*) - (?P<control>.*) = (?P<ours>[+-][\d.]+)",
        {"recorded": _FLOAT, "ours": _FLOAT},
    ),
    (
        "skill-creator-delta",
        r"recorded benchmark\.json's delta (?P<recorded>[+-][\d.]+) disagrees with its runs: "
        r"(?P<treatment>.*) - (?P<control>.*) = (?P<ours>[+-][\d.]+)",
        {"recorded": _FLOAT, "ours": _FLOAT},
    ),
    (
        "overridden",
        r"(?P<n>\d+) assertion results? overridden by reviewers: statistics use the overrides",
        {"n": _INT},
    ),
    (
        "regraded",
        r"(?P<n>\d+) run\(s\) graded or regraded by evalsite after import \((?P<judges>.*)\); "
        r"a benchmark\.json the source recorded describes the earlier gradings",
        {"n": _INT, "judges": _judges},
    ),
]
#: Codes whose sentence was reworded with the change: converted without the exact check.
REWORDED = {"flat-run-file-ignored"}


def structured(text: str, recorded: set[str]) -> dict[str, Any]:
    """One stored sentence as {code, params, message}."""
    for code, pattern, convert in PATTERNS:
        match = re.fullmatch(pattern, text)
        if match is None:
            continue
        params = {
            name: convert.get(name, str)(value) if value is not None else 0
            for name, value in match.groupdict().items()
        }
        try:
            warning = ValidityWarning(code, params)
            if warning.message == text or code in REWORDED:
                return warning.as_json()
        except (KeyError, ValueError, TypeError, IndexError):
            pass
    code = "recorded" if text in recorded else "legacy"
    return ValidityWarning(code, {"text": text}).as_json()


def _rewrite(apps: Any, convert: Callable[[Any], list[Any]]) -> None:
    Iteration = apps.get_model("runs", "Iteration")
    changed = []
    rows = Iteration.objects.only("validity_warnings", "recorded_benchmark").iterator(BATCH)
    for iteration in rows:
        new = convert(iteration)
        if new != iteration.validity_warnings:
            iteration.validity_warnings = new
            changed.append(iteration)
        if len(changed) >= BATCH:
            Iteration.objects.bulk_update(changed, ["validity_warnings"])
            changed = []
    Iteration.objects.bulk_update(changed, ["validity_warnings"])


def to_structured(apps: Any, schema_editor: Any) -> None:
    def convert(iteration: Any) -> list[Any]:
        benchmark = iteration.recorded_benchmark
        listed = benchmark.get("validity_warnings") if isinstance(benchmark, dict) else None
        recorded = {str(w) for w in listed or [] if isinstance(w, str)}
        return [
            structured(w, recorded) if isinstance(w, str) else w
            for w in iteration.validity_warnings or []
        ]

    _rewrite(apps, convert)


def to_sentences(apps: Any, schema_editor: Any) -> None:
    def convert(iteration: Any) -> list[Any]:
        return [
            w["message"] if isinstance(w, dict) else w for w in iteration.validity_warnings or []
        ]

    _rewrite(apps, convert)


class Migration(migrations.Migration):
    dependencies = [("runs", "0010_drop_iteration_skill_updated")]

    operations = [migrations.RunPython(to_structured, to_sentences, elidable=True)]
