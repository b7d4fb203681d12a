"""Writing trigger sets and trigger results found by discovery: create, update or skip.

A set becomes a version of the skill's trigger queries (`TriggerSet`); each description a
result tested becomes a trigger iteration, numbered once, keyed by its file (and loop step)
so a re-import updates it and an unchanged one is skipped.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from runs.changes import changed
from runs.models import (
    Skill,
    TriggerFormat,
    TriggerIteration,
    TriggerQuery,
    TriggerRun,
    TriggerSet,
)
from runs.stats.triggers import QueryOutcome, broken_harness
from runs.warnings import ValidityWarning

from .errors import ImportFailure
from .fitting import shortened
from .records import SkillDefinitions
from .report import ImportReport
from .tree import read_result_file
from .trigger_sets import ParsedSet, read_sets
from .triggers import SET, ParsedTriggers, read_results, sniff

#: run_loop.py's --results-dir names each run's folder by its start: 2026-01-31_142501.
FOLDER_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[_T](\d{2})(\d{2})(\d{2})")
#: The first tool calls of a run kept beside its outcome.
MAX_TOOL_CALLS = 5


def write_trigger_file(
    *,
    skill: Skill,
    path: Path,
    display: str,
    data: Any,
    part: str | None,
    definitions: SkillDefinitions | None,
    report: ImportReport,
    why: str,
) -> None:
    """Write the set or the results in `data` (only `part`'s, for a many-skills file)."""
    if sniff(data) == SET:
        for parsed in read_sets(data, display):
            if part is None or parsed.skill_name == part:
                _write_set(skill, parsed, display, report)
        report.placed.append((skill.name, f"trigger set {path.name}", display, why))
    else:
        for parsed in read_results(data, display):
            if part is None or parsed.skill_name == part:
                _write_results(skill, parsed, path, display, part, definitions, report)
        report.placed.append((skill.name, path.name, display, why))
    changed()


def _write_set(skill: Skill, parsed: ParsedSet, display: str, report: ImportReport) -> None:
    _, created = TriggerSet.objects.get_or_create(
        skill=skill,
        fingerprint=parsed.fingerprint(),
        defaults={"source_path": display, "queries": parsed.queries},
    )
    report.count("trigger sets", "created" if created else "skipped")


def _write_results(
    skill: Skill,
    parsed: ParsedTriggers,
    path: Path,
    display: str,
    part: str | None,
    definitions: SkillDefinitions | None,
    report: ImportReport,
) -> None:
    key = display + (f":{part}" if part else "") + (f"#{parsed.step}" if parsed.step else "")
    digest = parsed.digest()
    existing = TriggerIteration.objects.filter(skill=skill, source_key=key).first()
    if existing is not None and existing.content_hash == digest:
        report.count("trigger iterations", "skipped")
        return
    description, warnings = _description(skill, parsed, definitions)
    made_by = parsed.provenance.get("evalsite")
    made_by = made_by if isinstance(made_by, dict) else {}
    label = (
        path.name + (f" ({part})" if part else "") + (f" step {parsed.step}" if parsed.step else "")
    )
    fields = {
        "label": shortened(label, TriggerIteration, "label"),
        "source_path": display,
        "source_format": parsed.format
        if parsed.format in TriggerFormat.values
        else TriggerFormat.RUN_EVAL,
        "description": description,
        "description_recorded": parsed.description is not None,
        "loop_step": parsed.step,
        "is_best": parsed.is_best,
        "threshold": parsed.threshold,
        "runs_per_query": made_by.get("runs_per_query")
        or max((q.runs for q in parsed.queries if q.runs), default=None),
        "siblings": [str(s) for s in made_by.get("siblings") or []],
        "harness": " ".join(
            str(made_by[k]) for k in ("harness", "harness_version") if made_by.get(k)
        )[:200],
        "agent_model": str(made_by.get("model") or "")[:200],
        "generated_at": _generated_at(path, parsed),
        "validity_warnings": [w.as_json() for w in [*parsed.warnings, *warnings]]
        + _measurement_warnings(parsed),
        "provenance": parsed.provenance,
        "content_hash": digest,
        "trigger_set": _set_of(skill, parsed),
    }
    if existing is None:
        iteration = TriggerIteration.objects.create(
            skill=skill,
            number=TriggerIteration.objects.next_number(
                skill, source_key=key, label=fields["label"]
            ),
            source_key=key,
            **fields,
        )
        report.count("trigger iterations", "created")
    else:
        iteration = existing
        for name, value in fields.items():
            setattr(iteration, name, value)
        iteration.save()
        iteration.queries.all().delete()
        report.count("trigger iterations", "updated")
    created = TriggerQuery.objects.bulk_create(
        [
            TriggerQuery(
                iteration=iteration,
                position=position,
                query=q.query,
                should_trigger=q.should_trigger,
                expected_skill=q.expected_skill,
                split=q.split,
                triggers=q.triggers,
                runs=q.runs,
                rate=q.rate,
                recorded_pass=q.recorded_pass,
                errors=q.errors,
                loaded=q.loaded,
                extra=q.extra,
            )
            for position, q in enumerate(parsed.queries)
        ],
        batch_size=500,
    )
    runs = [
        _run(query, record, path.parent, display)
        for query, parsed_query in zip(created, parsed.queries, strict=True)
        for record in parsed_query.run_records
    ]
    TriggerRun.objects.bulk_create(runs, batch_size=500)


def _run(query: TriggerQuery, record: dict[str, Any], folder: Path, display: str) -> TriggerRun:
    """One recorded run, its transcript read from inside the result's own folder."""
    index = record.get("run")
    calls = record.get("tool_calls")
    return TriggerRun(
        query=query,
        run_index=index if isinstance(index, int) and not isinstance(index, bool) else 0,
        outcome=record["outcome"],
        loaded_skill=str(record.get("loaded_skill") or "")[:200],
        tool_calls=calls[:MAX_TOOL_CALLS] if isinstance(calls, list) else [],
        final_message=str(record.get("final_message") or ""),
        error=str(record.get("error") or ""),
        events=_transcript(folder, record.get("transcript"), display),
        duration_ms=_whole(record.get("duration_ms")),
        total_tokens=_whole(record.get("total_tokens")),
    )


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _transcript(folder: Path, relative: Any, display: str) -> list[Any] | None:
    """The run's conversation events: a relative path inside `folder`, never a link, never
    out of it; None when there is none or it cannot be read."""
    if not isinstance(relative, str) or not relative:
        return None
    parts = PurePosixPath(relative).parts
    if PurePosixPath(relative).is_absolute() or ".." in parts or not parts:
        return None
    path = folder
    for part in parts:
        path = path / part
        if path.is_symlink():
            return None
    try:
        data = orjson.loads(read_result_file(path, display=f"{display}: {relative}"))
    except (ImportFailure, orjson.JSONDecodeError):
        return None
    events = data.get("events", data.get("messages")) if isinstance(data, dict) else data
    return events if isinstance(events, list) else None


def _description(
    skill: Skill, parsed: ParsedTriggers, definitions: SkillDefinitions | None
) -> tuple[str, list[ValidityWarning]]:
    """The description tested: as recorded, else SKILL.md's (said so in a warning)."""
    if parsed.description is not None:
        return parsed.description, []
    known = (definitions.description if definitions else "") or skill.description
    if not known:
        return "", [ValidityWarning("trigger-description-unknown")]
    source = "its skill folder" if definitions and definitions.description else "stored"
    prefix = parsed.provenance.get("description_prefix")
    if isinstance(prefix, str):
        if known.startswith(prefix.rstrip()):
            return known, [ValidityWarning("trigger-description-from-skill", {"source": source})]
        return prefix + "...", [ValidityWarning("trigger-description-cut")]
    return known, [ValidityWarning("trigger-description-from-skill", {"source": source})]


def _measurement_warnings(parsed: ParsedTriggers) -> list[dict[str, Any]]:
    outcomes = [QueryOutcome.of(q) for q in parsed.queries]
    warnings = []
    if any(q.runs is None and q.rate is not None for q in parsed.queries):
        warnings.append(ValidityWarning("trigger-rates-only").as_json())
    if cause := broken_harness(outcomes):
        warnings.append(ValidityWarning("trigger-harness-broken", {"cause": cause}).as_json())
    return warnings


def _set_of(skill: Skill, parsed: ParsedTriggers) -> TriggerSet | None:
    """The stored version of the skill's trigger set that holds exactly these queries."""
    texts = {q.query for q in parsed.queries}
    for candidate in skill.trigger_sets.all():
        if {q.get("query") for q in candidate.queries} == texts:
            return candidate
    return None


def _generated_at(path: Path, parsed: ParsedTriggers) -> datetime | None:
    """When the result was made: a timestamp it records, else its folder's name."""
    made_by = parsed.provenance.get("evalsite")
    recorded = (
        parsed.provenance.get("timestamp")
        or parsed.provenance.get("generated_at")
        or (made_by.get("generated_at") if isinstance(made_by, dict) else None)
    )
    if isinstance(recorded, str):
        try:
            moment = datetime.fromisoformat(recorded.replace("Z", "+00:00"))
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        except ValueError:
            pass
    for folder in (path.parent.name, path.parent.parent.name):
        if match := FOLDER_TIME.search(folder):
            return datetime(*map(int, match.groups()), tzinfo=UTC)
    return None
