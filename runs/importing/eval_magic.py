"""eval-magic iteration folders (SPEC §3.1) read into ParsedIteration records."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import datetime
from typing import Any

from runs.models import SourceKind
from runs.roles import DEFAULT_ORDER
from runs.warnings import ValidityWarning

from . import jsonfiles
from .definitions import matches_what_ran
from .records import (
    EvalDefinition,
    ParsedCondition,
    ParsedGrading,
    ParsedIteration,
    ParsedResult,
    ParsedRun,
    read_usage,
)
from .tree import FileTree, run_slots

RUN_DIR = re.compile(r"^run-(\d+)$")
#: Files that make a folder a run (grading alone is enough: promoted copies have only that).
RUN_FILES = ("grading.json", "run.json", "conversation.json", "timing.json", "error.json")
FINDINGS = ("stray-writes", "guard-denials", "permission-denials")


def parse_timestamp(value: Any, *, display: str, pointer: str) -> datetime | None:
    """An ISO-8601 timestamp as an aware datetime, None when missing or unparseable; one
    that parses but no database can store is refused (see strictjson.parse_timestamp)."""
    return jsonfiles.parse_timestamp(value, display=display, pointer=pointer)


def harness_name(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("name") or value.get("id") or value.get("harness") or "")
    return str(value or "")


def read_iteration(
    tree: FileTree, *, skill_name: str, label: str, definitions: dict[str, EvalDefinition]
) -> ParsedIteration:
    """Parse an eval-magic iteration folder; raises ImportFailure on the first bad file."""
    conditions_doc = jsonfiles.load(
        tree.files["conditions.json"], "conditions", display=tree.shown("conditions.json")
    )
    benchmark = None
    if "benchmark.json" in tree.files:
        benchmark = jsonfiles.load(
            tree.files["benchmark.json"], "benchmark", display=tree.shown("benchmark.json")
        )
    mode = conditions_doc["mode"]
    iteration = ParsedIteration.from_tree(
        tree,
        skill_name=skill_name,
        label=label,
        source_kind=SourceKind.EVAL_MAGIC,
        timestamp=conditions_doc.get("timestamp") or "",
        mode=mode,
        run_label=str(conditions_doc.get("label") or ""),
        baseline=str(conditions_doc.get("baseline") or ""),
        agent_model=str(conditions_doc.get("agent_model") or ""),
        judge_model=str(conditions_doc.get("judge_model") or ""),
        harness=harness_name(conditions_doc.get("harness")),
        generated_at=parse_timestamp(
            conditions_doc.get("timestamp"),
            display=tree.shown("conditions.json"),
            pointer="/timestamp",
        ),
        recorded_benchmark=benchmark,
        provenance={"conditions.json": conditions_doc},
    )
    if benchmark:
        iteration.validity_warnings = list(benchmark.get("validity_warnings") or [])
    runevals = conditions_doc.get("runevals")
    if isinstance(runevals, dict) and runevals.get("sandbox") is False:
        iteration.notices.append(ValidityWarning("unsafe-no-sandbox"))
    if "skill-snapshot.md" in tree.files:
        iteration.skill_snapshot = jsonfiles.read_text(
            tree.files["skill-snapshot.md"], display=tree.shown("skill-snapshot.md")
        )
    for kind in FINDINGS:
        name = f"{kind}.json"
        if name in tree.files:
            iteration.findings[kind] = jsonfiles.load(
                tree.files[name], kind, display=tree.shown(name)
            )

    declared = {c["name"]: c for c in conditions_doc["conditions"]}
    order = (benchmark or {}).get("conditions_compared") or DEFAULT_ORDER.get(mode, [])
    names = [n for n in order if n in declared] + [n for n in declared if n not in order]
    for position, name in enumerate(names):
        entry = declared[name]
        loads = entry["skill_path"] is not None if "skill_path" in entry else None
        iteration.conditions.append(
            ParsedCondition(
                name=name,
                position=position,
                loads_skill=loads if loads is not None else name != "without_skill",
                skill_path=entry.get("skill_path") or "",
                staged_skill_slug=entry.get("staged_skill_slug") or "",
            )
        )

    undeclared: dict[str, list[str]] = defaultdict(list)
    for eval_dir, condition, run_index, prefix in _run_folders(tree, iteration.notices):
        if condition not in declared:
            # eval-magic reads only the conditions it declared; a stray folder is ignored.
            undeclared[condition].append(eval_dir)
            continue
        iteration.runs.append(
            _read_run(
                tree,
                prefix,
                eval_id=eval_dir[len("eval-") :],
                condition=condition,
                run_index=run_index,
            )
        )
    for condition, eval_dirs in sorted(undeclared.items()):
        params = {
            "condition": condition,
            "eval_folders": len(set(eval_dirs)),
            "first": tree.shown(eval_dirs[0] + "/" + condition),
            "declared": sorted(declared),
        }
        iteration.notices.append(ValidityWarning("undeclared-condition", params))
    with_runs = {run.condition for run in iteration.runs}
    for name in declared:
        if name not in with_runs:
            iteration.notices.append(ValidityWarning("condition-without-runs", {"condition": name}))
    iteration.evals = resolve_definitions(iteration.runs, definitions)
    return iteration


def _run_folders(tree: FileTree, notices: list[ValidityWarning]) -> list[tuple[str, str, int, str]]:
    """(eval folder, condition, run index, path prefix) of every run, flat or run-<k>.

    As in eval-magic, `run-<k>/` folders win over a flat run file beside them (named in a
    warning), and `run-0` is a run like any other.
    """
    cells: dict[tuple[str, str], dict[str, Any]] = defaultdict(lambda: {"flat": [], "runs": {}})
    for relpath in tree.sizes:
        parts = relpath.split("/")
        if len(parts) < 3 or not parts[0].startswith("eval-"):
            continue
        cell = cells[(parts[0], parts[1])]
        if len(parts) == 3 and parts[2] in RUN_FILES:
            cell["flat"].append(parts[2])
        elif len(parts) >= 4 and (m := RUN_DIR.match(parts[2])) and parts[3] in RUN_FILES:
            cell["runs"][int(m.group(1))] = f"{parts[0]}/{parts[1]}/{parts[2]}/"
    return [
        (eval_dir, condition, index, prefix)
        for (eval_dir, condition), cell in sorted(cells.items())
        for index, prefix in run_slots(
            tree,
            f"{eval_dir}/{condition}",
            run_folders=cell["runs"],
            flat_files=cell["flat"],
            notices=notices,
        )
    ]


def _read_run(
    tree: FileTree, prefix: str, *, eval_id: str, condition: str, run_index: int
) -> ParsedRun:
    def load(name: str, kind: str | None) -> Any:
        return tree.json(prefix + name, kind) if prefix + name in tree.files else None

    run = ParsedRun(
        eval_id=eval_id,
        condition=condition,
        run_index=run_index,
        source_relpath=prefix.rstrip("/"),
        content_hash=tree.digest(prefix),
    )
    record = load("run.json", "run")
    conversation = load("conversation.json", "conversation")
    timing = load("timing.json", "timing")
    grading = load("grading.json", "grading")
    if record:
        run.prompt = record["prompt"]
        run.final_message = record["final_message"]
        run.tool_invocations = record["tool_invocations"]
        conversation = conversation or record.get("conversation")
        # Timing canonically lives in timing.json; run.json's copy is only a fallback.
        run.total_tokens = record.get("total_tokens")
        run.duration_ms = record.get("duration_ms")
    if conversation:
        run.status = conversation["status"]
        run.stop_reason = conversation.get("stop_reason", "")
        run.conversation = conversation["events"]
        extras = {k: v for k, v in conversation.items() if k not in {"status", "events"}}
        if extras:
            run.artifacts["conversation_meta"] = extras
    if timing:
        run.total_tokens = timing.get("total_tokens")
        duration = timing.get("duration_ms")
        run.duration_ms = round(duration) if duration is not None else None
        run.timing_source = timing.get("source", "")
        read_usage(run, timing)
    if grading:
        run.grading = eval_magic_grading(grading)
    if (error := load("error.json", "run-error")) is not None:
        # runevals writes this when the API still failed after its retries: the run is
        # recorded as errored and kept out of pass rates, never graded as a failure.
        run.status = "errored"
        run.grading = None
        run.artifacts["error"] = error
    if (scope := load("diff-scope.json", "diff-scope")) is not None:
        run.artifacts["diff_scope"] = scope
    if (patch := tree.files.get(prefix + "diff.patch")) is not None:
        run.artifacts["diff_patch"] = jsonfiles.read_text(
            patch, display=tree.shown(prefix + "diff.patch")
        )
    for folder, kind in (("command-checks", "command-check"), ("judge-responses", None)):
        for relpath in tree.under(f"{prefix}{folder}/"):
            if relpath.endswith(".json") and relpath in tree.files:
                key = relpath[len(prefix) + len(folder) + 1 : -len(".json")]
                run.artifacts.setdefault(folder.replace("-", "_"), {})[key] = jsonfiles.load(
                    tree.files[relpath], kind, display=tree.shown(relpath)
                )
    return run


def eval_magic_grading(data: dict[str, Any], *, format: str = "eval-magic") -> ParsedGrading:
    """A validated eval-magic grading.json as a ParsedGrading (summary kept as recorded)."""
    results = [_result(r, is_meta=False) for r in data["assertion_results"]]
    results += [_result(r, is_meta=True) for r in data.get("meta_results") or []]
    summary = data["summary"]
    meta = data.get("meta_summary")
    return ParsedGrading.from_summary(
        summary,
        format=format,
        summary_computed=False,
        results=results,
        meta_passed=meta.get("passed") if meta else None,
        meta_failed=meta.get("failed") if meta else None,
        meta_total=meta.get("total") if meta else None,
        skill_invoked=meta.get("skill_invoked") if meta else None,
        has_meta_summary=meta is not None,
    )


def _result(data: dict[str, Any], *, is_meta: bool) -> ParsedResult:
    return ParsedResult(
        assertion_id=data["id"],
        passed=data["passed"],
        evidence=data.get("evidence") or "",
        confidence=data.get("confidence"),
        grader=data.get("grader") or "",
        is_meta=is_meta,
    )


def resolve_definitions(
    runs: list[ParsedRun], known: dict[str, EvalDefinition]
) -> dict[str, EvalDefinition]:
    """The definition each eval ran: evals.json's where it matches, else rebuilt from results."""
    graded: dict[str, set[str]] = defaultdict(set)
    prompts: dict[str, str] = {}
    for run in runs:
        if run.grading:
            graded[run.eval_id] |= {r.assertion_id for r in run.grading.results if not r.is_meta}
        if run.prompt and run.eval_id not in prompts:
            prompts[run.eval_id] = run.prompt
    resolved = {}
    for eval_id in dict.fromkeys(run.eval_id for run in runs):
        definition = known.get(eval_id)
        if definition and matches_what_ran(
            definition, prompt=prompts.get(eval_id), assertion_ids=graded[eval_id]
        ):
            resolved[eval_id] = definition
        else:
            resolved[eval_id] = reconstructed_definition(
                eval_id,
                prompt=prompts.get(eval_id, ""),
                assertion_ids=graded[eval_id],
                like=definition,
            )
    return resolved


def reconstructed_definition(
    eval_id: str, *, prompt: str, assertion_ids: set[str], like: EvalDefinition | None
) -> EvalDefinition:
    """A definition rebuilt from what the runs recorded (no matching evals.json)."""
    assertions = [{"id": a} for a in sorted(assertion_ids)]
    return EvalDefinition(
        eval_id=eval_id,
        definition={"id": eval_id, "prompt": prompt, "assertions": assertions},
        origin="results",
        prompt=prompt,
        assertions=assertions,
        # A changed definition keeps its trigger expectation; a new one defaults to true.
        skill_should_trigger=like.skill_should_trigger if like else True,
        tags=like.tags if like else [],
        weight=like.weight if like else 1.0,
    )
