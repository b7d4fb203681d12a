"""Eval definitions in the three dialects (SPEC §3.4) and SKILL.md front matter."""

from __future__ import annotations

from typing import Any

# One normalisation of assertions and expectation ids, shared with the graders (which must
# not need Django): a regraded run's results then line up with imported ones.
from runs.case_assertions import case_assertions
from runs.warnings import ValidityWarning

from . import jsonfiles
from .errors import ImportFailure
from .frontmatter import parse_front_matter
from .records import EvalDefinition, SkillDefinitions


def detect_dialect(data: Any) -> str:
    """'eval-magic', 'swl' or 'skill-creator' for a parsed evals.json."""
    if isinstance(data, list):
        return "skill-creator"
    if not isinstance(data, dict):
        return "eval-magic"  # the schema check will say what is wrong
    if "schema_version" in data or "artifact_type" in data:
        return "swl"
    evals = data.get("evals")
    if isinstance(evals, list):
        for case in evals:
            if isinstance(case, dict) and (
                "expectations" in case
                or isinstance(case.get("id"), int)
                or any(isinstance(a, str) for a in case.get("assertions") or [])
            ):
                return "skill-creator"
    return "eval-magic"


def parse_evals_json(
    raw: bytes, *, display: str, allow_empty_prompts: bool = False
) -> tuple[str | None, dict[str, EvalDefinition]]:
    """(skill_name, definitions by eval id) from an evals.json in any dialect."""
    data = jsonfiles.parse_json(raw, display=display)
    dialect = detect_dialect(data)
    if dialect == "skill-creator" and isinstance(data, list):
        data = {"evals": data}
    kind = {"eval-magic": "evals", "swl": "swl-evals", "skill-creator": "skill-creator-evals"}
    checked = data
    if allow_empty_prompts and isinstance(data, dict) and isinstance(data.get("evals"), list):
        # Validate as if each empty prompt held text; the definitions keep it empty.
        checked = {
            **data,
            "evals": [
                {**case, "prompt": "(empty)"}
                if isinstance(case, dict) and case.get("prompt") == ""
                else case
                for case in data["evals"]
            ],
        }
    jsonfiles.validate(checked, kind[dialect], display=display)

    definitions: dict[str, EvalDefinition] = {}
    first_seen: dict[str, int] = {}
    for index, case in enumerate(data["evals"]):
        eval_id = str(case["id"])
        if eval_id in definitions:
            raise ImportFailure(
                f"duplicate eval id {eval_id!r} (first at /evals/{first_seen[eval_id]})",
                path=display,
                pointer=f"/evals/{index}/id",
            )
        first_seen[eval_id] = index
        definitions[eval_id] = _definition(case, dialect)
    return data.get("skill_name"), definitions


def _definition(case: dict[str, Any], dialect: str) -> EvalDefinition:
    eval_id = str(case["id"])
    # The graders normalise assertions the same way, so regraded results line up.
    assertions = case_assertions(case)
    return EvalDefinition(
        eval_id=eval_id,
        definition=case,
        origin="evals.json",
        dialect=dialect,
        name=str(case.get("name") or case.get("eval_name") or ""),
        prompt=case.get("prompt") or "",
        expected_output=case.get("expected_output") or "",
        assertions=assertions,
        skill_should_trigger=case.get("skill_should_trigger", True) is not False,
        tags=[str(t) for t in case.get("tags") or []],
        weight=float(case.get("weight", 1.0)),
    )


def parse_skill_md(text: str, *, display: str) -> tuple[str | None, str]:
    """(name, description) from SKILL.md's front matter; (None, '') when it has none."""
    front = parse_front_matter(text, display=display)
    return front.name, front.description


def read_evals_hint(
    raw: bytes, *, display: str
) -> tuple[str | None, dict[str, EvalDefinition], ValidityWarning | None]:
    """(skill_name, definitions, warning) from an evals.json found beside results.

    Such a file only says which definitions the runs probably ran; nobody asked to import
    it. An eval with an empty prompt (a bare invocation eval) is accepted; a file that is
    still invalid is set aside with a one-line warning instead of rejecting the import.
    """
    try:
        name, definitions = parse_evals_json(raw, display=display)
        return name, definitions, None
    except ImportFailure as exc:
        first = exc
    try:
        name, definitions = parse_evals_json(raw, display=display, allow_empty_prompts=True)
    except ImportFailure:
        return None, {}, ValidityWarning("evals-json-unused", {"problem": first.message})
    return name, definitions, None


def read_skill_definitions(
    *,
    skill_md: bytes | None,
    evals_json: bytes | None,
    folder_name: str,
    display: str,
    strict: bool = True,
) -> SkillDefinitions:
    """A skill folder's name, description and eval definitions.

    `strict` is for a folder the user pointed at: its evals.json must be valid. A skill
    folder found while searching a collection only lends its definitions to results, so an
    invalid evals.json there is set aside with a warning.
    """
    name, description, warnings = None, "", []
    if skill_md is not None:
        front = parse_front_matter(
            jsonfiles.read_text(skill_md, display=f"{display}/SKILL.md"),
            display=f"{display}/SKILL.md",
        )
        name, description = front.name, front.description
        if front.warning:
            warnings.append(front.warning)
    evals: dict[str, EvalDefinition] = {}
    if evals_json is not None:
        shown = f"{display}/evals/evals.json"
        if strict:
            evals_name, evals = parse_evals_json(evals_json, display=shown)
        else:
            evals_name, evals, warning = read_evals_hint(evals_json, display=shown)
            if warning:
                warnings.append(warning.message)
        name = name or evals_name
    return SkillDefinitions(
        skill_name=name or folder_name,
        description=description,
        evals=evals,
        source=display,
        warnings=warnings,
    )


def matches_what_ran(
    definition: EvalDefinition, *, prompt: str | None, assertion_ids: set[str]
) -> bool:
    """Whether a definition from evals.json describes the runs that were graded.

    evals.json is today's file; an old iteration may have run an older definition. Use it only
    when the prompt (where recorded) and the graded assertion ids agree with it.
    """
    if prompt and definition.prompt and prompt.strip() != definition.prompt.strip():
        return False
    return not assertion_ids or assertion_ids == definition.assertion_ids
