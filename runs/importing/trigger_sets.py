"""Trigger sets: a skill's queries, each saying whether the skill should load (SPEC §3.5).

Every set shape `triggers.sniff` calls SET, as one list of {"query", "should_trigger"}; a query
given twice is one query.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

from .errors import ImportFailure
from .triggers import flag, text


@dataclass
class ParsedSet:
    """A skill's trigger queries: [{"query", "should_trigger", "expected"?}]."""

    skill_name: str | None
    queries: list[dict[str, Any]]
    description: str | None = None

    def fingerprint(self) -> str:
        return hashlib.sha256(orjson.dumps(self.queries)).hexdigest()


def read_sets(data: Any, where: str) -> list[ParsedSet]:
    """The trigger sets in a document (one per skill where it groups them by skill)."""
    if isinstance(data, list) and data and "queries" in data[0]:
        return [
            _set(entry.get("skill"), entry.get("queries"), f"{where}/{i}/queries")
            for i, entry in enumerate(data)
        ]
    if isinstance(data, list):
        return [_set(None, data, where)]
    if isinstance(data.get("should_trigger"), list):
        items = [
            {"query": item.get("prompt", item.get("query")), "should_trigger": should}
            for key, should in (("should_trigger", True), ("should_not_trigger", False))
            for item in data.get(key) or []
            if isinstance(item, dict)
        ]
        return [_set(data.get("skill_name") or data.get("skill"), items, where)]
    if "cases" in data:
        cases = [
            {"query": case.get("prompt"), "should_trigger": case.get("expected_trigger")}
            for case in data["cases"]
            if isinstance(case, dict)
        ]
        parsed = _set(data.get("skill"), cases, f"{where}/cases")
        parsed.description = data.get("description_under_test") or None
        return [parsed]
    return [_set(data.get("skill") or data.get("skill_name"), data.get("evals"), f"{where}/evals")]


def _set(name: Any, items: Any, where: str) -> ParsedSet:
    if not isinstance(items, list):
        raise ImportFailure(f"{where}: expected a list of queries")
    queries: dict[str, dict[str, Any]] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ImportFailure(f"{where}/{i}: expected an object with query and should_trigger")
        query = text(item.get("query"), f"{where}/{i}/query")
        row: dict[str, Any] = {
            "query": query,
            "should_trigger": flag(item.get("should_trigger"), f"{where}/{i}/should_trigger"),
        }
        queries.setdefault(query, row)
    named = name.strip() if isinstance(name, str) and name.strip() else None
    return ParsedSet(named, list(queries.values()))
