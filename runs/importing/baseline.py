"""eval-magic promoted baselines (`<skill>/evals/baseline/`, SPEC §3.2)."""

from __future__ import annotations

import re
from typing import Any

from runs.models import SourceKind
from runs.roles import DEFAULT_ORDER

from . import jsonfiles
from .errors import ImportFailure
from .eval_magic import (
    eval_magic_grading,
    parse_timestamp,
    resolve_definitions,
)
from .records import EvalDefinition, ParsedCondition, ParsedIteration, ParsedRun
from .tree import FileTree

GRADING_NAME = re.compile(
    r"^(?P<eval>.+?)__(?P<condition>[A-Za-z0-9_-]+?)(?:__r(?P<run>\d+))?\.json$"
)
TABLE_ROW = re.compile(r"^\|\s*(?P<field>[^|]+?)\s*\|\s*(?P<value>[^|]*?)\s*\|\s*$")


def parse_provenance(text: str) -> dict[str, str]:
    """BASELINE.md's `| Field | Value |` table as a dict (header and rule rows dropped)."""
    fields = {}
    for line in text.splitlines():
        match = TABLE_ROW.match(line.strip())
        if not match:
            continue
        field, value = match.group("field"), match.group("value")
        if field.lower() == "field" or set(field) <= {"-", ":", " "}:
            continue
        fields[field] = value
    return fields


def _unset(value: str | None) -> str:
    return "" if value is None or value.strip().lower() in {"", "(none)", "none", "-"} else value


def campaign_identity(
    provenance: dict[str, str], benchmark: dict[str, Any] | None
) -> tuple[str, str]:
    """(label, timestamp) of a promoted campaign: BASELINE.md's Iteration and Run timestamp,
    else the benchmark's `generated`. `--history` tells campaigns apart by the same rule."""
    label = _unset(provenance.get("Iteration")) or "baseline"
    timestamp = _unset(provenance.get("Run timestamp")) or (benchmark or {}).get("generated") or ""
    return label, str(timestamp)


def read_baseline(
    tree: FileTree, *, skill_name: str, definitions: dict[str, EvalDefinition]
) -> ParsedIteration:
    """Parse `evals/baseline/` (tree rooted there) into one iteration."""
    provenance = {}
    if "BASELINE.md" in tree.files:
        provenance = parse_provenance(
            jsonfiles.read_text(tree.files["BASELINE.md"], display=tree.shown("BASELINE.md"))
        )
    benchmark = None
    if "benchmark.json" in tree.files:
        benchmark = jsonfiles.load(
            tree.files["benchmark.json"], "benchmark", display=tree.shown("benchmark.json")
        )
    mode = _unset(provenance.get("Mode")) or (benchmark or {}).get("mode") or "new-skill"
    if mode not in DEFAULT_ORDER:
        raise ImportFailure(
            f"Mode must be new-skill or revision, got {mode!r}", path=tree.shown("BASELINE.md")
        )
    label, timestamp = campaign_identity(provenance, benchmark)
    recorded = _unset(provenance.get("Run timestamp"))
    where = (
        (tree.shown("BASELINE.md"), "")
        if recorded
        else (tree.shown("benchmark.json"), "/generated")
    )
    iteration = ParsedIteration.from_tree(
        tree,
        skill_name=skill_name,
        label=label,
        source_kind=SourceKind.BASELINE,
        timestamp=timestamp,
        mode=mode,
        run_label=_unset(provenance.get("Label")),
        baseline=(benchmark or {}).get("baseline") or "",
        agent_model=_unset(provenance.get("Agent model")),
        judge_model=_unset(provenance.get("Judge model")),
        harness=_unset(provenance.get("Harness")),
        generated_at=parse_timestamp(timestamp, display=where[0], pointer=where[1]),
        recorded_benchmark=benchmark,
        provenance={"BASELINE.md": provenance} if provenance else {},
    )
    if "NOTES.md" in tree.files:
        iteration.notes = jsonfiles.read_text(
            tree.files["NOTES.md"], display=tree.shown("NOTES.md")
        )
    if benchmark:
        iteration.validity_warnings = list(benchmark.get("validity_warnings") or [])
        # Promoted baselines carry no timing.json: these figures exist only here.
        iteration.recorded_aggregates = {
            "source": "benchmark.json",
            "run_summary": {
                name: {k: v for k, v in summary.items() if k in {"duration_ms", "total_tokens"}}
                for name, summary in benchmark["run_summary"].items()
            },
        }

    runs = []
    for relpath in sorted(tree.files):
        if not relpath.startswith("grading/") or relpath.count("/") != 1:
            continue
        match = GRADING_NAME.match(relpath.removeprefix("grading/"))
        if not match:
            raise ImportFailure(
                "expected a file named <eval-id>__<condition>.json or "
                "<eval-id>__<condition>__r<k>.json",
                path=tree.shown(relpath),
            )
        data = jsonfiles.load(tree.files[relpath], "grading", display=tree.shown(relpath))
        run = ParsedRun(
            eval_id=match.group("eval"),
            condition=match.group("condition"),
            run_index=int(match.group("run") or 1),
            source_relpath=relpath,
            content_hash=tree.digest(relpath),
            grading=eval_magic_grading(data),
        )
        definition = definitions.get(run.eval_id)
        if definition:
            run.prompt = definition.prompt
        runs.append(run)
    if not runs:
        raise ImportFailure("no grading/<eval-id>__<condition>.json files", path=tree.display)
    iteration.runs = runs

    named = [c.strip() for c in _unset(provenance.get("Conditions")).split(",") if c.strip()]
    order = named or (benchmark or {}).get("conditions_compared") or DEFAULT_ORDER[mode]
    seen = list(dict.fromkeys(r.condition for r in runs))
    for name in seen:
        if name not in order:
            raise ImportFailure(
                f"condition {name!r} matches no condition of this baseline ({', '.join(order)})",
                path=tree.shown(next(r.source_relpath for r in runs if r.condition == name)),
            )
    for position, name in enumerate([n for n in order if n in seen]):
        iteration.conditions.append(
            ParsedCondition(name=name, position=position, loads_skill=name != "without_skill")
        )
    iteration.evals = resolve_definitions(runs, definitions)
    return iteration
