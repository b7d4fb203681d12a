"""Names and sizes checked against the columns before anything is written (SPEC §2).

Names become URLs, so one that cannot be is refused; descriptions are cut to their
column, identities that do not fit are refused, each with one line naming the file.
"""

from __future__ import annotations

from collections.abc import Iterable

from runs.models import AssertionResult, Condition, EvalCase, Iteration, Run
from runs.names import (
    InvalidName,
    validate_condition_name,
    validate_eval_id,
    validate_skill_name,
)

from .errors import ImportFailure
from .records import ParsedIteration


def check_names(
    skill_name: str, *, eval_ids: Iterable[str], conditions: Iterable[str], path: str
) -> str:
    """The skill's name as stored; names become URLs, so any that cannot be one is refused
    here, at the boundary (SPEC §2)."""
    try:
        skill_name = validate_skill_name(skill_name)
        for eval_id in dict.fromkeys(eval_ids):
            validate_eval_id(eval_id)
        for condition in conditions:
            validate_condition_name(condition)
    except InvalidName as exc:
        raise ImportFailure(str(exc), path=path) from None
    return skill_name


#: Run indexes and grading counts are 32-bit columns on PostgreSQL.
MAX_COUNT = 2**31 - 1


def check_counts(parsed: ParsedIteration) -> None:
    for run in parsed.runs:
        figures = {"run index": run.run_index}
        if run.grading is not None:
            g = run.grading
            figures |= {"summary.passed": g.passed, "summary.failed": g.failed}
            figures |= {"summary.total": g.total, "meta_summary.total": g.meta_total or 0}
        for what, value in figures.items():
            if not 0 <= value <= MAX_COUNT:
                raise ImportFailure(
                    f"{what} {value} is out of range (0 to {MAX_COUNT})",
                    path=f"{parsed.source_path}/{run.source_relpath}",
                )


def _max_length(model: type, field: str) -> int:
    return model._meta.get_field(field).max_length


def shortened(value: str, model: type, field: str) -> str:
    """A descriptive text cut to its column (PostgreSQL refuses a longer one; SQLite keeps
    it), with an ellipsis to show it was cut."""
    limit = _max_length(model, field)
    return value if len(value) <= limit else value[: limit - 1] + "…"


def fit_lengths(parsed: ParsedIteration) -> None:
    """Descriptions (models, labels, names) are shortened to their columns; identities
    (folder names, paths, assertion ids) that do not fit are refused with one line."""
    for name in ("run_label", "baseline", "agent_model", "judge_model", "harness"):
        setattr(parsed, name, shortened(getattr(parsed, name), Iteration, name))
    for condition in parsed.conditions:
        condition.staged_skill_slug = shortened(
            condition.staged_skill_slug, Condition, "staged_skill_slug"
        )
    for definition in parsed.evals.values():
        definition.name = shortened(definition.name, EvalCase, "name")

    def refuse(what: str, value: str, limit: int, path: str) -> None:
        raise ImportFailure(
            f"{what} is {len(value)} characters, over the {limit} it may have", path=path
        )

    for name, value in (("folder name", parsed.label), ("iteration key", parsed.source_key)):
        field = "label" if name == "folder name" else "source_key"
        if len(value) > (limit := _max_length(Iteration, field)):
            refuse(name, value, limit, parsed.source_path)
    relpath_limit = _max_length(Run, "source_relpath")
    id_limit = _max_length(AssertionResult, "assertion_id")
    stop_limit = _max_length(Run, "stop_reason")
    grader_limit = _max_length(AssertionResult, "grader")
    for run in parsed.runs:
        where = f"{parsed.source_path}/{run.source_relpath}"
        if len(run.source_relpath) > relpath_limit:
            refuse("the run's path", run.source_relpath, relpath_limit, parsed.source_path)
        run.stop_reason = run.stop_reason[:stop_limit]
        seen: set[tuple[bool, str]] = set()
        for result in run.grading.results if run.grading else ():
            if (result.is_meta, result.assertion_id) in seen:
                raise ImportFailure(
                    f"assertion id {result.assertion_id!r} is graded twice in one run", path=where
                )
            seen.add((result.is_meta, result.assertion_id))
            if len(result.assertion_id) > id_limit:
                refuse(
                    f"assertion id {result.assertion_id[:40]!r}…",
                    result.assertion_id,
                    id_limit,
                    where,
                )
            result.grader = result.grader[:grader_limit]
