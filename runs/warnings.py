"""Validity warnings: a code, its parameters, and the sentence rendered from them.

An iteration stores each warning as `{"code", "params", "message"}`: code that needs to
know which warning it holds (the reviewer's override count, the regrade's, a recomputed
"no grading") reads the code, never the sentence; people read `message`. `SENTENCES` is
every code evalsite writes, with the sentence its parameters fill in (str.format, plus the
list formats of `_SentenceFormatter`). Plain Python, no Django.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: How many runs, evals or assertions a warning names before "and N more".
MAX_NAMED = 5

SENTENCES: dict[str, str] = {
    # What the source tool itself warned about (benchmark.json), as it wrote it.
    "recorded": "{text}",
    # Stored before warnings had codes, in a form the migration did not recognise.
    "legacy": "{text}",
    # The importer: layouts it tolerated.
    "unsafe-no-sandbox": (
        "runevals ran this iteration with --unsafe-no-sandbox: what the agents and the "
        "command checks ran was not contained, and may have read this machine's secrets"
    ),
    "undeclared-condition": (
        "condition folder {condition!r} in {eval_folders} eval folder(s) (first {first}) is "
        "not declared in conditions.json ({declared:list}); it was ignored"
    ),
    "condition-without-runs": "condition {condition!r} of conditions.json has no runs",
    "flat-run-file-ignored": (
        "{folder} holds run-<k> folders and a flat {file}; the run folders were imported "
        "and the flat file ignored"
    ),
    "runs-from-zero": "{folder}: run folders are numbered from run-0",
    "evals-json-unused": "{problem} (not used to link evals)",
    # The importer: what skill-creator's own reader accepts, read as it does.
    "nulls-read-as-missing": (
        "null read as a missing value at {fields:list} in {n} {file} file(s): "
        "{files:list}{unnamed:more}"
    ),
    "benchmark-not-json": ("{problem}; the gradings beside it were imported without it"),
    "benchmark-not-read": (
        "{problem}; the gradings beside it were imported, and benchmark.json only "
        "cross-checked against them"
    ),
    "eval-folders-merged": (
        "eval {eval_id!r} is in {folders:and} with the same prompt: imported as one eval, "
        "the later folder's runs numbered after the earlier's"
    ),
    "eval-id-shared": (
        "eval id {eval_id!r} is used by {folders:and} for different evals: imported as "
        "distinct evals {ids:list}"
    ),
    "benchmark-of-several-skills": (
        "{file} describes the runs of several skills; its figures are not this skill's, so "
        "they are recomputed from this skill's runs alone"
    ),
    "benchmark-only-runs": (
        "{n} run(s) exist only in {file} (no run folder holds them) and were read from it: "
        "{cells:list}"
    ),
    "benchmark-runs-unplaced": (
        "{file} lists runs of {configurations:list}, which no folder holds, but not the "
        "eval folders' ids ({ids:list}), so its runs cannot be put beside theirs; not read"
    ),
    "outputs-without-grading": (
        "{n} run(s) have outputs but no grading.json: {runs:list}{unnamed:more}"
    ),
    "gradings-not-read": (
        "{n} grading file(s) could not be read, their runs imported as missing gradings: "
        "{problems:semicolons}{unnamed:more}"
    ),
    # The importer: what the runs say about the comparison.
    "uneven-run-counts": "uneven run counts on {eval_id}: {counts:counts}",
    "errored-runs": (
        "{n} run(s) errored and are left out of pass rates: {runs:list}{unnamed:more}"
    ),
    "no-grading": "{n} run(s) have no grading: {runs:list}{unnamed:more}",
    "zero-assertions": (
        "eval(s) with zero assertions score 0 in eval-magic's pass rate: {evals:list}"
    ),
    "diluted-invocation": (
        "{condition} invoked the skill in {invoked} of {runs} run(s) ({percent:.0f}%): "
        "the comparison is diluted"
    ),
    "assertion-sets-differ": (
        "{eval_id}: the conditions were graded on different assertions "
        "({assertions:assertion-sets})"
    ),
    "stray-writes": "{run} wrote {count} file(s) outside its task environment ({file})",
    "guard-denials": "{run}: {count} tool call(s) blocked by the write guard ({file})",
    "harness-refusals": "{run}: {count} tool call(s) refused by the harness ({file})",
    # The importer: the recorded benchmark.json checked against the gradings.
    "benchmark-conditions-missing": (
        "recorded benchmark.json compares {conditions:and}, which are not both in this iteration"
    ),
    "benchmark-disagrees": (
        "recorded benchmark.json disagrees with the gradings: {problems:semicolons}{unnamed:(more)}"
    ),
    "skill-creator-mean": (
        "recorded benchmark.json gives {condition} a mean pass rate of {recorded:.3f}; "
        "its runs give {ours:.3f}"
    ),
    "skill-creator-delta-order": (
        "recorded benchmark.json's delta {recorded:+.2f} is {first} - {second} (skill-creator "
        "subtracts in alphabetical order); evalsite shows treatment - control: "
        "{treatment} - {control} = {ours:+.2f}"
    ),
    "skill-creator-delta": (
        "recorded benchmark.json's delta {recorded:+.2f} disagrees with its runs: "
        "{treatment} - {control} = {ours:+.2f}"
    ),
    # Trigger evals (runs/importing/triggers.py, runs/stats/triggers.py).
    "trigger-query-repeated": (
        "{n} query text(s) given more than once, each counted as one query with its runs "
        "added up: {queries:list}{unnamed:more}"
    ),
    "trigger-description-from-skill": (
        "the result does not record the description it tested: SKILL.md's ({source}) is shown"
    ),
    "trigger-description-unknown": (
        "the result does not record the description it tested, and no SKILL.md of the skill "
        "was imported: the description is unknown"
    ),
    "trigger-description-cut": (
        "the result cut the description it tested short, and SKILL.md's does not begin with "
        "it: the cut text is shown"
    ),
    "trigger-rates-only": (
        "the result records trigger rates but no run counts: each query's rate is taken as "
        "given, with no interval"
    ),
    "trigger-harness-broken": "{cause}",
    # Kept true by the reviewing and regrading workflows.
    "overridden": (
        "{n} assertion result{n:s} overridden by reviewers: statistics use the overrides"
    ),
    "regraded": (
        "{n} run(s) graded or regraded by evalsite after import ({judges:judges}); a "
        "benchmark.json the source recorded describes the earlier gradings"
    ),
}


class _SentenceFormatter(string.Formatter):
    """str.format, plus format specs for the lists a warning names."""

    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec == "list":
            return ", ".join(str(v) for v in value)
        if format_spec == "and":
            return " and ".join(str(v) for v in value)
        if format_spec == "semicolons":
            return "; ".join(str(v) for v in value)
        if format_spec == "more":
            return f" and {value} more" if value else ""
        if format_spec == "(more)":
            return f" (and {value} more)" if value else ""
        if format_spec == "s":
            return "" if value == 1 else "s"
        if format_spec == "counts":
            return ", ".join(f"{name} {n}" for name, n in sorted(value.items()))
        if format_spec == "judges":
            return f"judge {', '.join(value)}" if value else "no judge asked"
        if format_spec == "assertion-sets":
            return "; ".join(
                f"{condition}: {', '.join(ids[:MAX_NAMED]) or 'none'}"
                + (f" and {len(ids) - MAX_NAMED} more" if len(ids) > MAX_NAMED else "")
                for condition, ids in sorted(value.items())
            )
        return super().format_field(value, format_spec)


_FORMATTER = _SentenceFormatter()


@dataclass(frozen=True)
class ValidityWarning:
    """One warning: its code and parameters; `message` is the sentence they render."""

    code: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def message(self) -> str:
        return _FORMATTER.format(SENTENCES[self.code], **self.params)

    def as_json(self) -> dict[str, Any]:
        """What `Iteration.validity_warnings` stores."""
        return {"code": self.code, "params": dict(self.params), "message": self.message}

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> ValidityWarning:
        return cls(str(stored["code"]), dict(stored.get("params") or {}))

    @classmethod
    def recorded(cls, text: str) -> ValidityWarning:
        """A warning the source tool wrote (benchmark.json's `validity_warnings`)."""
        return cls("recorded", {"text": str(text)})


def named(items: list[str]) -> dict[str, Any]:
    """`{"runs": the first MAX_NAMED, "unnamed": how many more}` for a warning naming runs."""
    return {"runs": items[:MAX_NAMED], "unnamed": max(0, len(items) - MAX_NAMED)}


def merged(*groups: Iterable[ValidityWarning]) -> list[dict[str, Any]]:
    """The warnings of every group in order, as stored, one per sentence.

    A sentence given twice keeps its first place, and the code evalsite gave it when the
    other copy is only the source's record of it (runevals writes evalsite's own warnings
    into benchmark.json, which an import reads back).
    """
    kept: dict[str, ValidityWarning] = {}
    for warning in (w for group in groups for w in group):
        message = warning.message
        if message not in kept or kept[message].code == "recorded":
            kept[message] = warning
    return [warning.as_json() for warning in kept.values()]


def messages(stored: Iterable[Mapping[str, Any]]) -> list[str]:
    """The sentences of stored warnings, in order (benchmark.json's `validity_warnings`)."""
    return [str(warning["message"]) for warning in stored]


def without(stored: Iterable[Mapping[str, Any]], *codes: str) -> list[dict[str, Any]]:
    """Stored warnings minus those with one of `codes`."""
    return [dict(warning) for warning in stored if warning.get("code") not in codes]
