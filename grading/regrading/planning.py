"""Each run's new grading, computed from what the import stored; nothing is written here.

The graders are runevals' own (`grading.graders`); what an imported run cannot give them —
its task folder — decides, per assertion kind, what is regraded and what is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anthropic
from django.db.models import Count, QuerySet

from grading.graders.diff import DiffMeasurement, diff_scope
from grading.graders.judge import JudgeUnavailable, llm_judge
from grading.graders.meta import SKILL_INVOKED_ID, skill_check_applies, skill_invoked_check
from grading.graders.transcript import transcript_check
from runs.importing import run_name
from runs.models import AssertionResult, Grading, Iteration, Run

from .report import JudgeFailed, Planned, Progress, RegradeReport

#: Why an assertion kept its recorded result, or was recorded as not graded; one note each.
NO_FOLDER = (
    "kept their recorded result — the task folder is gone; only judge and transcript "
    "assertions can be regraded"
)
NOT_GRADED = (
    "had no result and are recorded as not graded (FAIL, confidence 0: needs review) — "
    "the task folder is gone"
)
FROM_RECORD = "graded from their recorded diff-scope.json (the task folder is gone)"
NO_TRANSCRIPT = "kept their recorded result — no transcript is stored to recompute it from"
NOT_CHECKED = "not checked — no transcript is stored"
NOTHING_STORED = "kept their recorded result — nothing the agent did is stored for a judge to read"
NO_DEFINITION = (
    "kept their recorded result — the eval's definition was rebuilt from results and "
    "says nothing about it"
)

#: The evidence of a command or diff check that could not be run after import.
NOT_GRADED_EVIDENCE = (
    "not graded: {kind} needs the run's task folder, which an imported run does not keep "
    "(regraded after import)"
)


def grade_runs(
    iteration: Iteration,
    runs: QuerySet[Run],
    *,
    judge_model: str,
    assertion_id: str | None,
    client: anthropic.Anthropic | None,
    report: RegradeReport,
    progress: Progress | None,
) -> list[Planned]:
    """Each run's new grading, in page order; JudgeFailed as soon as a judge call fails."""
    total = runs.count()
    multi = multi_run_cells(iteration)
    queryset = (
        runs.select_related("condition", "eval_case", "grading")
        .prefetch_related("grading__results")
        .order_by("eval_id", "condition__position", "run_index")
    )
    planned = []
    for done, run in enumerate(queryset.iterator(chunk_size=200), start=1):
        try:
            outcome = _grade_run(
                run,
                skill_name=iteration.skill.name,
                judge_model=judge_model,
                assertion_id=assertion_id,
                client=client,
                report=report,
            )
        except JudgeUnavailable as exc:
            raise JudgeFailed(f"{run_label(run, multi)}: {exc}; nothing was saved") from exc
        if outcome is None:
            report.skipped += 1
        else:
            planned.append(outcome)
        if progress is not None:
            progress(done, total, run_label(run, multi))
    return planned


def _grade_run(
    run: Run,
    *,
    skill_name: str,
    judge_model: str,
    assertion_id: str | None,
    client: anthropic.Anthropic | None,
    report: RegradeReport,
) -> Planned | None:
    """The run's new results, or None when there is nothing to (re)grade in it."""
    grading: Grading | None = getattr(run, "grading", None)
    old = {(r.is_meta, r.assertion_id): r for r in grading.results.all()} if grading else {}
    definition = [a for a in run.eval_case.assertions if isinstance(a, Mapping)]
    record = judge_record(run)
    has_transcript = bool(run.conversation or run.tool_invocations)
    readable = has_transcript or bool(record["final_message"])
    if grading is None:
        if any(not a.get("type") for a in definition):
            report.note(
                f"eval {run.eval_id}",
                "left ungraded — its definition was rebuilt "
                "from recorded results and has no assertion types or rubrics",
            )
            return None
        if not readable:
            report.note("ungraded", "left ungraded — nothing the agent did is stored")
            return None

    notes: set[tuple[str, str]] = set()
    results: list[dict[str, Any]] = []
    regraded_any = False
    for assertion in definition:
        key = (False, str(assertion.get("id", "")))
        kind = str(assertion.get("type") or "")
        before = old.pop(key, None)
        if assertion_id not in (None, key[1]):
            if before is not None:
                results.append(_kept(before))
            continue
        new, why = _assertion_result(
            assertion,
            kind=kind,
            run=run,
            record=record,
            has_transcript=has_transcript,
            readable=readable,
            had_result=before is not None,
            client=client,
            judge_model=judge_model,
            report=report,
        )
        if new is not None:
            results.append({**new, "is_meta": False, "regraded": True})
            regraded_any = True
            if why:
                notes.add((kind, why))
        elif before is not None:
            results.append(_kept(before))
            notes.add((kind or "untyped", why))
        else:  # only a command or diff check of a run with no grading gets here
            evidence = NOT_GRADED_EVIDENCE.format(kind=kind)
            results.append(
                {"id": key[1], "passed": False, "evidence": evidence, "confidence": 0.0}
                | {"grader": kind, "is_meta": False, "regraded": True, "not_graded": True}
            )
            regraded_any = True
            notes.add((kind, NOT_GRADED))
    # Recorded results the definition does not name (kept as they are, in their order).
    results += [_kept(r) for key, r in sorted(old.items(), key=_position) if not key[0]]

    applies = skill_check_applies(
        skill_loaded=run.condition.loads_skill,
        skill_should_trigger=run.eval_case.skill_should_trigger,
    )
    meta_regraded = False
    if applies and assertion_id in (None, SKILL_INVOKED_ID):
        if has_transcript:
            results.append({**_skill_invoked(record, run, skill_name), "regraded": True})
            meta_regraded = regraded_any = True
        elif (True, SKILL_INVOKED_ID) in old:
            notes.add((SKILL_INVOKED_ID, NO_TRANSCRIPT))
        else:
            notes.add((SKILL_INVOKED_ID, NOT_CHECKED))
    results += [
        _kept(r)
        for key, r in sorted(old.items(), key=_position)
        if key[0] and not (meta_regraded and key[1] == SKILL_INVOKED_ID)
    ]
    for subject, reason in notes:
        report.note(subject, reason)
    if not regraded_any:
        return None
    return Planned(
        run_id=run.pk,
        content_hash=run.content_hash,
        grading_id=grading.pk if grading else None,
        results=results,
    )


def _assertion_result(
    assertion: Mapping[str, Any],
    *,
    kind: str,
    run: Run,
    record: Mapping[str, Any],
    has_transcript: bool,
    readable: bool,
    had_result: bool,
    client: anthropic.Anthropic | None,
    judge_model: str,
    report: RegradeReport,
) -> tuple[dict[str, Any] | None, str]:
    """(the new result, a note to make) or (None, why the recorded result stands)."""
    if kind == "transcript_check":
        # Without a stored transcript the grader would fail a check it once passed.
        if has_transcript or not had_result:
            return transcript_check(record, assertion).as_json(), ""
        return None, NO_TRANSCRIPT
    if kind == "llm_judge":
        if not readable:
            return None, NOTHING_STORED
        outcome = llm_judge(record, assertion, client=client, judge_model=judge_model)
        report.judge_calls += 1
        report.judge_tokens += sum(outcome.usage.values())
        text = str(assertion.get("text") or "")
        return {**outcome.result.as_json(), "judge_model": outcome.model, "text": text}, ""
    if kind == "diff_scope" and not had_result and (measured := _recorded_diff(run)):
        verdict, _ = diff_scope(assertion, measurement=measured)
        return verdict.as_json(), FROM_RECORD
    if kind in ("command_check", "diff_scope"):
        return None, NO_FOLDER
    return None, NO_DEFINITION


def _skill_invoked(record: Mapping[str, Any], run: Run, skill_name: str) -> dict[str, Any]:
    """`__skill_invoked` by the skill's name, or by the slug the condition staged it under."""
    meta = skill_invoked_check(record, skill_name=skill_name)
    slug = run.condition.staged_skill_slug
    if not meta.passed and slug and slug != skill_name:
        staged = skill_invoked_check(record, skill_name=slug)
        meta = staged if staged.passed else meta
    return {**meta.as_json(), "is_meta": True}


def _recorded_diff(run: Run) -> DiffMeasurement | None:
    record = run.artifacts.get("diff_scope") if isinstance(run.artifacts, dict) else None
    keys = ("files_touched", "lines_added", "lines_removed", "hunks")
    if not isinstance(record, dict) or not all(isinstance(record.get(k), int) for k in keys):
        return None
    return DiffMeasurement(record=record, patch=str(run.artifacts.get("diff_patch") or ""))


def _kept(result: AssertionResult) -> dict[str, Any]:
    return {"id": result.assertion_id, "is_meta": result.is_meta, "regraded": False}


def _position(item: tuple[tuple[bool, str], AssertionResult]) -> int:
    return item[1].position


def judge_record(run: Run) -> dict[str, Any]:
    """The run as the graders read run.json, from what the import stored.

    skill-creator keeps a run's answer in `outputs/`, not in a final message: the files
    the import kept are appended to the final message, which is what the judge reads.
    """
    definition = run.eval_case.definition if isinstance(run.eval_case.definition, dict) else {}
    record: dict[str, Any] = {
        "prompt": run.prompt or run.eval_case.prompt,
        "files": [str(f) for f in definition.get("files") or []],
        "final_message": _with_outputs(run.final_message, (run.artifacts or {}).get("outputs")),
        "tool_invocations": list(run.tool_invocations or []),
    }
    if run.conversation:
        record["conversation"] = {"status": run.status, "events": list(run.conversation)}
    return record


def _with_outputs(final: str, outputs: Any) -> str:
    if not isinstance(outputs, list) or not outputs:
        return final
    lines = [final.rstrip(), ""] if final.strip() else []
    lines.append("Files the run left in outputs/:")
    for entry in outputs:
        if not isinstance(entry, dict):
            continue
        lines.append(f"--- outputs/{entry.get('path', '?')} ({entry.get('size', '?')} bytes) ---")
        text = entry.get("text")
        lines.append(text if isinstance(text, str) else "(not stored: binary or too large)")
    return "\n".join(lines)


def run_label(run: Run, multi: set[tuple[str, int]]) -> str:
    return run_name(
        run.eval_id, run.condition.name, run.run_index, (run.eval_id, run.condition_id) in multi
    )


def multi_run_cells(iteration: Iteration) -> set[tuple[str, int]]:
    """(eval id, condition id) of the cells holding more than one run: their names say run-k."""
    cells = (
        Run.objects.filter(iteration=iteration)
        .values("eval_id", "condition_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    return {(c["eval_id"], c["condition_id"]) for c in cells}
