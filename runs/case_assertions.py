"""An eval case's assertions in any evals.json dialect, as graders take them (SPEC §3.4).

SWL and skill-creator `expectations` are free text: each becomes an `llm_judge` assertion
whose id is a slug of the text and whose rubric is the text (SWL's `grading_guidance` is
appended when the judge is asked). The importer (`runs.importing.definitions`) and the
graders (`grading.graders`) use these same functions, so a regraded run's results line up
with imported ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


def slugify(text: str, *, max_length: int = 80) -> str:
    """A stable id for a free-text expectation: lowercase words joined by '-'."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:max_length].rstrip("-") or "expectation"


def unique_slugs(texts: list[str]) -> list[str]:
    """Slugs of the texts, suffixed -2, -3… where two texts slug the same."""
    seen: dict[str, int] = {}
    slugs = []
    for text in texts:
        slug = slugify(text)
        seen[slug] = seen.get(slug, 0) + 1
        slugs.append(slug if seen[slug] == 1 else f"{slug}-{seen[slug]}")
    return slugs


def judge_assertions(texts: list[str], *, guidance: str = "") -> list[dict[str, Any]]:
    """Free-text expectations as `llm_judge` assertions, id = slug of the text."""
    assertions = []
    for slug, text in zip(unique_slugs(texts), texts, strict=True):
        assertion: dict[str, Any] = {"id": slug, "type": "llm_judge", "text": text, "rubric": text}
        if guidance:
            assertion["grading_guidance"] = guidance
        assertions.append(assertion)
    return assertions


def case_assertions(case: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The assertions of one evals.json entry, whatever its dialect.

    eval-magic's typed assertions are kept as they are; `expectations` (SWL,
    skill-creator) and skill-creator's string or untyped `assertions` become judge
    assertions, an object's own `id` kept when it has one.
    """
    if case.get("expectations"):
        texts = [str(t) for t in case["expectations"]]
        return judge_assertions(texts, guidance=str(case.get("grading_guidance") or ""))
    items = list(case.get("assertions") or [])
    if all(isinstance(item, Mapping) and "type" in item for item in items):
        return _with_ids([dict(item) for item in items])
    texts = [
        item
        if isinstance(item, str)
        else str(
            item.get("text") or item.get("description") or item.get("name") or item.get("id") or ""
        )
        for item in items
    ]
    assertions = judge_assertions(texts)
    for assertion, item in zip(assertions, items, strict=True):
        if not isinstance(item, Mapping):
            continue
        # `{name, description}`: the name is the assertion's handle, the description its
        # rubric; keep both so results that quote either line up (importer) with this id.
        if item.get("name") and not item.get("id"):
            assertion["id"] = slugify(str(item["name"]))
        if item.get("id"):
            assertion["id"] = str(item["id"])
        for key in ("name", "description"):
            if isinstance(item.get(key), str):
                assertion[key] = item[key]
    return _unique_ids(assertions)


def _with_ids(assertions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Typed assertions without an `id` get a stable one: a slug of what they say, else
    their type and position, so a regrade and a re-import name them the same way."""
    taken = {str(a["id"]) for a in assertions if a.get("id")}
    for position, assertion in enumerate(assertions, start=1):
        if assertion.get("id"):
            continue
        said = next(
            (
                str(assertion[key])
                for key in ("name", "description", "text", "rubric")
                if isinstance(assertion.get(key), str) and assertion[key].strip()
            ),
            "",
        )
        candidate = slugify(said) if said else f"{slugify(str(assertion['type']))}-{position}"
        while candidate in taken:
            candidate = f"{candidate}-{position}"
        taken.add(candidate)
        assertion["id"] = candidate
    return assertions


def _unique_ids(assertions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, int] = {}
    for assertion in assertions:
        seen[assertion["id"]] = seen.get(assertion["id"], 0) + 1
        if seen[assertion["id"]] > 1:
            assertion["id"] = f"{assertion['id']}-{seen[assertion['id']]}"
    return assertions


def judge_rubric(assertion: Mapping[str, Any]) -> str:
    """The question put to the judge: the rubric (or text), with grading guidance appended."""
    rubric = str(assertion.get("rubric") or assertion.get("text") or "")
    guidance = str(assertion.get("grading_guidance") or "").strip()
    if guidance:
        rubric += f"\n\nGrading guidance:\n{guidance}"
    return rubric
