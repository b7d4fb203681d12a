"""What the layout readers hand to the writer: plain, validated, database-free records."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from runs.warnings import ValidityWarning

if TYPE_CHECKING:
    from .tree import FileTree


def fingerprint(definition: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of an eval definition (key order does not matter)."""
    return hashlib.sha256(orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass
class EvalDefinition:
    eval_id: str
    definition: dict[str, Any]
    origin: str  # EvalCase.Origin value
    dialect: str = ""
    name: str = ""
    prompt: str = ""
    expected_output: str = ""
    assertions: list[dict[str, Any]] = field(default_factory=list)
    skill_should_trigger: bool = True
    tags: list[str] = field(default_factory=list)
    weight: float = 1.0

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.definition)

    @property
    def assertion_ids(self) -> set[str]:
        return {a["id"] for a in self.assertions}


@dataclass
class SkillDefinitions:
    """A skill folder's SKILL.md and evals.json."""

    skill_name: str
    description: str = ""
    evals: dict[str, EvalDefinition] = field(default_factory=dict)
    source: str = ""
    #: What was tolerated while reading the folder (a SKILL.md that is not YAML, an
    #: evals.json found on the way rather than asked for), one line each.
    warnings: list[str] = field(default_factory=list)


@dataclass
class ParsedResult:
    assertion_id: str
    passed: bool
    evidence: str = ""
    confidence: float | None = None
    grader: str = ""
    text: str = ""
    is_meta: bool = False


@dataclass
class ParsedGrading:
    format: str
    passed: int
    failed: int
    total: int
    pass_rate: float
    summary_computed: bool
    results: list[ParsedResult]
    meta_passed: int | None = None
    meta_failed: int | None = None
    meta_total: int | None = None
    skill_invoked: bool | None = None
    has_meta_summary: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_summary(
        cls,
        summary: dict[str, Any],
        *,
        format: str,
        summary_computed: bool,
        results: list[ParsedResult],
        **fields: Any,
    ) -> ParsedGrading:
        """A grading whose figures are a grading.json `summary`: passed, failed, total and
        pass_rate, as recorded or as evalsite computed them (`summary_computed`)."""
        return cls(
            format=format,
            passed=summary["passed"],
            failed=summary["failed"],
            total=summary["total"],
            pass_rate=float(summary["pass_rate"]),
            summary_computed=summary_computed,
            results=results,
            **fields,
        )


@dataclass
class ParsedRun:
    eval_id: str
    condition: str
    run_index: int
    source_relpath: str
    content_hash: str
    status: str = "completed"
    stop_reason: str = ""
    prompt: str = ""
    final_message: str = ""
    conversation: list[dict[str, Any]] = field(default_factory=list)
    tool_invocations: list[dict[str, Any]] = field(default_factory=list)
    artifacts: dict[str, Any] = field(default_factory=dict)
    total_tokens: int | None = None
    duration_ms: int | None = None
    timing_source: str = ""
    #: The tokens by kind, where timing.json says (`read_usage`); None where it does not.
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_write_tokens: int | None = None
    cache_read_tokens: int | None = None
    grading: ParsedGrading | None = None


#: timing.json `usage` (runevals writes the Messages API's names) → ParsedRun's fields.
USAGE_FIELDS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
}


def read_usage(run: ParsedRun, timing: dict[str, Any]) -> None:
    """The run's tokens by kind from timing.json's `usage` object (or the same keys at its
    top level), leniently: without whole input and output counts there is no breakdown, and
    the run keeps only its total; missing cache counts are 0."""
    usage = timing.get("usage")
    usage = usage if isinstance(usage, dict) else timing
    counts = {}
    for key, name in USAGE_FIELDS.items():
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            counts[name] = value
    if "input_tokens" not in counts or "output_tokens" not in counts:
        return
    run.input_tokens, run.output_tokens = counts["input_tokens"], counts["output_tokens"]
    run.cache_write_tokens = counts.get("cache_write_tokens", 0)
    run.cache_read_tokens = counts.get("cache_read_tokens", 0)
    if run.total_tokens is None:
        run.total_tokens = run.input_tokens + run.output_tokens
        run.total_tokens += run.cache_write_tokens + run.cache_read_tokens


def names_skill(value: Any, skill_name: str) -> bool:
    """Whether a Skill tool argument names the skill (plain, plugin:skill or a staged slug)."""
    if not isinstance(value, str) or not value:
        return False
    return value == skill_name or value.endswith((f":{skill_name}", f"__{skill_name}"))


def skill_called(run: ParsedRun, skill_name: str) -> bool | None:
    """Whether the run's transcript shows a Skill call naming the skill; None without one."""
    calls = [e for e in run.conversation if e.get("type") == "tool_invocation"]
    calls = calls or run.tool_invocations
    if not calls and not run.conversation:
        return None
    return any(
        call.get("name") == "Skill"
        and isinstance(args := call.get("args"), dict)
        and any(names_skill(args.get(key), skill_name) for key in ("skill", "name", "command"))
        for call in calls
    )


@dataclass
class ParsedCondition:
    name: str
    position: int
    loads_skill: bool
    skill_path: str = ""
    staged_skill_slug: str = ""


@dataclass
class ParsedReview:
    run_relpath_key: str  # skill-creator run_id: relpath with "/" replaced by "-"
    text: str
    created_at: datetime | None


@dataclass
class ParsedIteration:
    skill_name: str
    label: str
    source_kind: str
    source_key: str
    source_path: str
    content_hash: str
    mode: str = "new-skill"
    run_label: str = ""
    baseline: str = ""
    agent_model: str = ""
    judge_model: str = ""
    harness: str = ""
    generated_at: datetime | None = None
    conditions: list[ParsedCondition] = field(default_factory=list)
    runs: list[ParsedRun] = field(default_factory=list)
    #: Eval definitions by id: from evals.json when it matches what ran, else reconstructed.
    evals: dict[str, EvalDefinition] = field(default_factory=dict)
    validity_warnings: list[str] = field(default_factory=list)
    recorded_benchmark: dict[str, Any] | None = None
    recorded_aggregates: dict[str, Any] | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    skill_snapshot: str = ""
    notes: str = ""
    findings: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    reviews: list[ParsedReview] = field(default_factory=list)
    skill_description: str = ""
    #: Validity warnings about what the importer tolerated (SPEC §3: lenient, never silent).
    notices: list[ValidityWarning] = field(default_factory=list)

    @classmethod
    def from_tree(
        cls,
        tree: FileTree,
        *,
        skill_name: str,
        label: str,
        source_kind: str,
        timestamp: str,
        **fields: Any,
    ) -> ParsedIteration:
        """An iteration read from `tree`: it is known across re-imports by its kind, label
        and timestamp (the source key), and its content by the digest of the tree's files."""
        return cls(
            skill_name=skill_name,
            label=label,
            source_kind=source_kind,
            source_key=f"{label}@{timestamp}",
            source_path=tree.display,
            content_hash=tree.digest(),
            **fields,
        )

    @property
    def missing_gradings(self) -> int:
        return sum(1 for run in self.runs if run.grading is None)
