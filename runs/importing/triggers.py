"""Trigger sets and trigger results, in every shape SPEC §3.5 lists, as plain records.

`sniff` says what a parsed JSON document is (a set, results, or a trigger-ish shape evalsite
does not read) by its keys alone, so discovery can place it wherever it sits. `read_results`
turns results into one `ParsedTriggers` per description they tested (run_loop.py's history
gives one per step); sets are read by `trigger_sets`. Queries are keyed by their text: a
query given twice is one query (its runs added up).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from runs.warnings import ValidityWarning

from .errors import ImportFailure

SET = "set"
RESULTS = "results"
#: skill-creator's run_eval.py threshold.
THRESHOLD = 0.5
#: What a description cut short ends with in the many-skills shape ("…80 characters...").
CUT = "..."


@dataclass
class ParsedQuery:
    query: str
    should_trigger: bool
    expected_skill: str = ""
    split: str = ""
    triggers: int | None = None
    runs: int | None = None
    rate: float | None = None
    recorded_pass: bool | None = None
    errors: int = 0
    loaded: dict[str, int] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: runevals --triggers: each run's outcome, skill loaded, first tool calls, transcript path.
    run_records: list[dict[str, Any]] = field(default_factory=list)


#: What a run of runevals --triggers came to (TriggerOutcome's values).
OUTCOMES = {"loaded", "other", "none", "timeout", "error"}


@dataclass
class ParsedTriggers:
    """One description tested on a set of queries."""

    format: str
    #: The skill the result names, if it names one.
    skill_name: str | None
    #: None when the result did not record it (the SKILL.md description is taken).
    description: str | None
    queries: list[ParsedQuery]
    step: int | None = None
    is_best: bool = False
    threshold: float = THRESHOLD
    provenance: dict[str, Any] = field(default_factory=dict)
    warnings: list[ValidityWarning] = field(default_factory=list)

    def digest(self) -> str:
        """What identifies this result's content: equal digests are the same result."""
        rows = [
            (q.query, q.should_trigger, q.split, q.triggers, q.runs, q.rate) for q in self.queries
        ]
        payload = orjson.dumps([self.format, self.description, self.step, rows])
        return hashlib.sha256(payload).hexdigest()


def _is_query(item: Any, *keys: str) -> bool:
    return isinstance(item, dict) and all(key in item for key in keys)


def _rows(value: Any, *keys: str) -> bool:
    return isinstance(value, list) and bool(value) and all(_is_query(i, *keys) for i in value)


#: Keys of a row that say it was measured (a run triggered, or not), not only asked for.
MEASURED = ("trigger_rate", "triggers", "pass", "triggered", "passed")
#: Keys of a row that name the skill an agent or a model picked: routing, not triggering.
PICKED = ("top", "got", "picked", "predicted", "bm25_top_k", "actual_skill")
ROUTING_RESULTS = "routing results (the skill picked per query), not imported yet"
ROUTING_SET = (
    "a routing set (each query with the skill expected by name, no should_trigger); "
    "not imported yet"
)
JUDGEMENTS = "trigger judgements (predicted by a model, not measured runs); not imported"


def _rows_with(value: Any, keys: tuple[str, ...]) -> bool:
    """A list of objects, some holding one of `keys`."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(i, dict) for i in value)
        and any(key in i for i in value for key in keys)
    )


def sniff(data: Any) -> str | None:
    """SET, RESULTS, a sentence naming a trigger shape evalsite does not read, or None."""
    if isinstance(data, list):
        if _rows(data, "query", "should_trigger"):
            if not all(isinstance(i["should_trigger"], bool) for i in data):
                return ROUTING_SET
            return RESULTS if any(k in i for i in data for k in MEASURED) else SET
        if _rows(data, "skill", "queries"):
            return SET
        if _rows_with(data, PICKED):
            return ROUTING_RESULTS
        if _rows_with(data, ("results",)) and any(
            _rows_with(i.get("results"), PICKED) for i in data if isinstance(i, dict)
        ):
            return ROUTING_RESULTS
        if _rows(data, "query") and _rows_with(data, ("expect", "expected", "skill")):
            return ROUTING_SET
        return None
    if not isinstance(data, dict):
        return None
    if _rows(data.get("results"), "query", "should_trigger"):
        return RESULTS
    if isinstance(data.get("history"), list) and "best_description" in data:
        return RESULTS
    if _rows(data.get("skills"), "skill", "results"):
        return RESULTS
    if _rows(data.get("query_results"), "query", "should_trigger"):
        return RESULTS
    if _rows(data.get("cases"), "query", "expected", "actual"):
        return RESULTS
    if _rows(data.get("evals"), "query"):
        evals = data["evals"]
        if all(isinstance(i.get("should_trigger"), bool) for i in evals):
            return SET
        if _rows_with(evals, ("should_trigger", "should_trigger_not", "expected", "expect")):
            return ROUTING_SET
    if _rows(data.get("cases"), "prompt", "expected_trigger"):
        return SET
    if _rows(data.get("should_trigger"), "prompt") or _rows(data.get("should_trigger"), "query"):
        return SET
    if _rows_with(data.get("baseline"), ("predicted",)):
        return JUDGEMENTS
    for value in data.values():
        rows = value.get("rows") if isinstance(value, dict) else value
        if _rows_with(rows, PICKED):
            return ROUTING_RESULTS
    return None


def text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ImportFailure(f"{where}: expected a non-empty string")
    return value.strip()


def flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ImportFailure(f"{where}: expected true or false")
    return value


def _count(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ImportFailure(f"{where}: expected a count (a whole number ≥ 0)")
    return value


def _rate(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ImportFailure(f"{where}: expected a rate between 0 and 1")
    return float(value)


def _query(item: Mapping[str, Any], where: str, split: str = "") -> ParsedQuery:
    """One run_eval-like row: query, should_trigger, and counts or a rate."""
    triggers = _count(item.get("triggers", item.get("trigger_count")), f"{where}/triggers")
    runs = _count(item.get("runs", item.get("run_count")), f"{where}/runs")
    if triggers is None and runs is None and isinstance(item.get("triggered"), bool):
        triggers, runs = int(item["triggered"]), 1  # one run, recorded as whether it loaded
    if triggers is not None and runs is not None and triggers > runs:
        raise ImportFailure(f"{where}/triggers: {triggers} triggers out of {runs} runs")
    if runs is None:
        triggers = None
    passed = item.get("pass", item.get("passed"))
    extra = {k: v for k, v in item.items() if k.startswith("mean_") or k == "fixture"}
    recorded_split = item.get("split")
    expected = item.get("expected")
    return ParsedQuery(
        query=text(item.get("query"), f"{where}/query"),
        should_trigger=flag(item.get("should_trigger"), f"{where}/should_trigger"),
        split=recorded_split if recorded_split in ("train", "test") else split,
        expected_skill=expected.strip()[:200] if isinstance(expected, str) else "",
        triggers=triggers,
        runs=runs,
        rate=_rate(item.get("trigger_rate"), f"{where}/trigger_rate"),
        recorded_pass=passed if isinstance(passed, bool) else None,
        errors=_count(item.get("errors"), f"{where}/errors") or 0,
        loaded=_loaded(item.get("loaded"), f"{where}/loaded"),
        extra=extra,
        run_records=_run_records(item.get("run_records"), f"{where}/run_records"),
    )


def _loaded(value: Any, where: str) -> dict[str, int] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ImportFailure(f"{where}: expected an object of run counts by skill")
    return {str(k)[:200]: _count(n, f"{where}/{k}") or 0 for k, n in value.items()}


def _run_records(value: Any, where: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ImportFailure(f"{where}: expected a list of runs")
    for i, record in enumerate(value):
        if not isinstance(record, dict) or record.get("outcome") not in OUTCOMES:
            known = ", ".join(sorted(OUTCOMES))
            raise ImportFailure(f"{where}/{i}/outcome: expected one of {known}")
    return value


def _merged(queries: list[ParsedQuery]) -> tuple[list[ParsedQuery], list[str]]:
    """One query per text, the runs of a repeated one added up; the texts repeated."""
    kept: dict[str, ParsedQuery] = {}
    repeated: list[str] = []
    for query in queries:
        first = kept.get(query.query)
        if first is None:
            kept[query.query] = query
            continue
        repeated.append(query.query)
        if first.runs is not None and query.runs is not None:
            first.runs += query.runs
            first.triggers = (first.triggers or 0) + (query.triggers or 0)
            first.rate = None
    return list(kept.values()), repeated


def _rows_of(value: Any, where: str, split: str = "") -> list[ParsedQuery]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ImportFailure(f"{where}: expected a list of query results")
    return [_query(item, f"{where}/{i}", split) for i, item in enumerate(value) if item is not None]


def _parsed(
    kind: str, name: Any, description: Any, queries: list[ParsedQuery], **fields: Any
) -> ParsedTriggers:
    queries, repeated = _merged(queries)
    warnings = []
    if repeated:
        params = {"n": len(repeated), "queries": repeated[:3], "unnamed": max(0, len(repeated) - 3)}
        warnings.append(ValidityWarning("trigger-query-repeated", params))
    described = description.strip() if isinstance(description, str) and description else None
    named = name.strip() if isinstance(name, str) and name.strip() else None
    return ParsedTriggers(kind, named, described, queries, warnings=warnings, **fields)


def read_results(data: Any, where: str) -> list[ParsedTriggers]:
    """Every description the results tested; ImportFailure naming the field when malformed."""
    if isinstance(data, list):
        return [_parsed("rates", None, None, _rows_of(data, where))]
    threshold = data.get("trigger_threshold", data.get("threshold", THRESHOLD))
    threshold = _rate(threshold, f"{where}/threshold") if threshold is not None else THRESHOLD
    if "history" in data:
        return _loop(data, where, threshold)
    if "skills" in data:
        return [
            _cut(
                _parsed(
                    "run_eval",
                    entry.get("skill"),
                    entry.get("description"),
                    _rows_of(entry.get("results"), f"{where}/skills/{i}/results"),
                    threshold=threshold,
                )
            )
            for i, entry in enumerate(data["skills"])
        ]
    if "query_results" in data:
        rows = _rows_of(data["query_results"], f"{where}/query_results")
        summary = data.get("summary") if isinstance(data.get("summary"), dict) else {}
        return [
            _parsed(
                "skill_eval",
                data.get("skill_name"),
                data.get("description"),
                rows,
                threshold=threshold,
                provenance={"summary": summary},
            )
        ]
    if "cases" in data:
        cases = [
            {**case, "should_trigger": case.get("expected"), "triggered": case.get("actual")}
            for case in data["cases"]
            if isinstance(case, dict)
        ]
        rows = _rows_of(cases, f"{where}/cases")
    else:
        rows = _rows_of(data.get("results"), f"{where}/results")
    fields = {
        k: v for k, v in data.items() if k not in {"results", "cases", "description", "skill_name"}
    }
    made_by = data.get("evalsite")
    if isinstance(made_by, dict) and made_by.get("threshold") is not None:
        threshold = _rate(made_by["threshold"], f"{where}/evalsite/threshold") or 0.0
    return [
        _parsed(
            "evalsite" if isinstance(made_by, dict) else "run_eval",
            data.get("skill_name"),
            data.get("description"),
            rows,
            threshold=threshold,
            provenance=fields,
        )
    ]


def _cut(parsed: ParsedTriggers) -> ParsedTriggers:
    """A description the file cut short is not the one tested: SKILL.md's is looked up."""
    if parsed.description and parsed.description.endswith(CUT):
        parsed.provenance["description_prefix"] = parsed.description.removesuffix(CUT)
        parsed.description = None
    return parsed


def _loop(data: Mapping[str, Any], where: str, threshold: float) -> list[ParsedTriggers]:
    """run_loop.py's results.json: one description per history step, train and test apart."""
    history = data["history"]
    best = data.get("best_description")
    keep = ("exit_reason", "holdout", "best_score", "best_train_score", "best_test_score")
    provenance = {key: data[key] for key in keep if key in data}
    steps = []
    for i, step in enumerate(history):
        at = f"{where}/history/{i}"
        if not isinstance(step, dict):
            raise ImportFailure(f"{at}: expected an object")
        train = step.get("train_results", step.get("results"))
        rows = _rows_of(train, f"{at}/train_results", "train" if step.get("test_results") else "")
        rows += _rows_of(step.get("test_results"), f"{at}/test_results", "test")
        number = step.get("iteration", i + 1)
        description = step.get("description")
        steps.append(
            _parsed(
                "run_loop",
                data.get("skill_name"),
                description,
                rows,
                step=number if isinstance(number, int) and not isinstance(number, bool) else i + 1,
                is_best=isinstance(best, str) and description == best,
                threshold=threshold,
                provenance=provenance,
            )
        )
    if not steps:
        raise ImportFailure(f"{where}/history: no steps")
    return steps
