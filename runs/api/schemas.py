"""The API's response schemas: each reads the attributes of the object it is given.

The endpoints hand these the models and the statistics' dataclasses as they are; a
`resolve_<field>` says where a field comes from when it is not an attribute of that name.
"""

# No `from __future__ import annotations`: ninja and pydantic read these annotations at
# runtime to build the request parsers and the OpenAPI document.

from datetime import datetime
from typing import Any

from ninja import Schema
from pydantic import Field

from .. import pricing
from ..names import address
from ..warnings import messages
from .reports import imported_iterations


class IntervalOut(Schema):
    low: float
    high: float


class ScoreOut(Schema):
    mean: float
    n_evals: int
    n_runs: int
    interval: IntervalOut | None
    per_eval: dict[str, float]


class ProportionOut(Schema):
    successes: int
    n: int
    rate: float | None
    interval: IntervalOut | None


class CostOut(Schema):
    """US dollars at the price table's rates (runs.pricing); `note` says what is missing."""

    total_usd: float | None
    mean_usd: float | None
    priced_runs: int
    note: str


class TokenKindsOut(Schema):
    input: int
    output: int
    cache_write: int
    cache_read: int


class ConditionOut(Schema):
    name: str
    role: str
    loads_skill: bool
    score: ScoreOut | None
    sentence: str
    runs: int
    graded: int
    errored: int
    invocation: ProportionOut | None
    false_trigger: ProportionOut | None
    mean_tokens: float | None
    mean_duration_ms: float | None
    cost: CostOut


class DeltaOut(Schema):
    treatment: str
    control: str
    mean: float
    n: int
    se: float | None
    interval: IntervalOut | None
    p_value: float | None
    signal: str


class ValidityWarningOut(Schema):
    code: str
    params: dict[str, Any]
    message: str


class IterationOut(Schema):
    # Reads a `reading.summaries.IterationSummary`: its iteration's fields and the statistics.
    number: int = Field(alias="iteration.number")
    label: str = Field(alias="iteration.label")
    mode: str = Field(alias="iteration.mode")
    source_kind: str = Field(alias="iteration.source_kind")
    agent_model: str = Field(alias="iteration.agent_model")
    judge_model: str = Field(alias="iteration.judge_model")
    generated_at: datetime | None = Field(alias="iteration.generated_at")
    #: The warnings' sentences; `validity_warning_details` has each one's code and params.
    validity_warnings: list[str]
    validity_warning_details: list[ValidityWarningOut]
    conditions: list[ConditionOut]
    treatment: str | None
    control: str | None
    delta: DeltaOut | None
    verdict: str
    gain_per_1k_tokens: float | None
    #: The agent runs' cost; what a treatment run costs more, and that per pass-rate point
    #: gained (only for a significant gain that costs more).
    cost: CostOut
    extra_cost_per_run: float | None
    cost_per_point: float | None
    evals: list[str]
    zero_assertion_evals: list[str]
    #: None for a name stored before names were validated, that no address can hold.
    url: str | None

    @staticmethod
    def resolve_validity_warnings(summary: Any) -> list[str]:
        return messages(summary.iteration.validity_warnings)

    @staticmethod
    def resolve_validity_warning_details(summary: Any) -> list[dict[str, Any]]:
        return summary.iteration.validity_warnings

    @staticmethod
    def resolve_treatment(summary: Any) -> str | None:
        return summary.treatment.name if summary.treatment else None

    @staticmethod
    def resolve_control(summary: Any) -> str | None:
        return summary.control.name if summary.control else None

    @staticmethod
    def resolve_url(summary: Any) -> str | None:
        return address(summary.iteration.get_absolute_url)


class SkillOut(Schema):
    # Reads a `reading.overview.SkillRow`: the skill and its latest iteration's summary.
    name: str = Field(alias="skill.name")
    description: str = Field(alias="skill.description")
    iterations: int
    latest: IterationOut | None
    #: None for a name stored before names were validated, that no address can hold.
    url: str | None

    @staticmethod
    def resolve_latest(row: Any) -> Any:
        return row.summary if row.latest and row.summary else None

    @staticmethod
    def resolve_url(row: Any) -> str | None:
        return address(row.skill.get_absolute_url)


class ResultOut(Schema):
    id: int
    assertion_id: str
    is_meta: bool
    passed: bool
    override_passed: bool | None
    effective_passed: bool
    evidence: str
    confidence: float | None
    needs_review: bool
    grader: str
    text: str


class GradingOut(Schema):
    passed: int
    failed: int
    total: int
    pass_rate: float
    summary_computed: bool
    original_summary: dict[str, float] | None
    skill_invoked: bool | None
    results: list[ResultOut]


class ReviewOut(Schema):
    kind: str
    source: str
    author: str | None
    assertion_id: str
    original_passed: bool | None
    overridden_passed: bool | None
    text: str
    created_at: datetime

    @staticmethod
    def resolve_author(review: Any) -> str | None:
        return review.author.get_username() if review.author else None


class RunOut(Schema):
    eval_id: str
    condition: str = Field(alias="condition.name")
    run_index: int
    status: str
    total_tokens: int | None
    tokens_by_kind: TokenKindsOut | None
    cost: CostOut
    duration_ms: int | None
    skill_called: bool | None
    grading: GradingOut | None
    reviews: list[ReviewOut]
    #: None for a name stored before names were validated, that no address can hold.
    url: str | None

    @staticmethod
    def resolve_tokens_by_kind(run: Any) -> Any:
        return run.token_kinds()

    @staticmethod
    def resolve_cost(run: Any) -> Any:
        return pricing.run_cost(
            run.iteration.agent_model, run.token_kinds(), total_tokens=run.total_tokens
        )

    @staticmethod
    def resolve_grading(run: Any) -> Any:
        return getattr(run, "grading", None)  # a run without grading.json has none

    @staticmethod
    def resolve_url(run: Any) -> str | None:
        return address(run.get_absolute_url)


class RunDetailOut(RunOut):
    final_message: str
    conversation: list[dict[str, Any]]
    tool_invocations: list[dict[str, Any]]

    @staticmethod
    def resolve_conversation(run: Any) -> list[dict[str, Any]]:
        return list(run.conversation or [])

    @staticmethod
    def resolve_tool_invocations(run: Any) -> list[dict[str, Any]]:
        return list(run.tool_invocations or [])


class EvalChangeOut(Schema):
    eval_id: str
    treatment_before: float | None
    treatment_after: float | None
    treatment_change: float | None
    treatment_change_interval: IntervalOut | None
    delta_before: float | None
    delta_after: float | None
    delta_change: float | None
    p_value: float | None
    adjusted_p: float | None
    badge: str | None

    @staticmethod
    def resolve_treatment_change(change: Any) -> float | None:
        return change.treatment_change.value if change.treatment_change else None

    @staticmethod
    def resolve_treatment_change_interval(change: Any) -> Any:
        return change.treatment_change.interval if change.treatment_change else None

    @staticmethod
    def resolve_delta_change(change: Any) -> float | None:
        return change.delta_change.value if change.delta_change else None


class FlipOut(Schema):
    eval_id: str
    assertion_id: str
    role: str
    direction: str
    rate_before: float = Field(alias="before.rate")
    rate_after: float = Field(alias="after.rate")

    @staticmethod
    def resolve_role(flip: Any) -> str:
        return str(flip.role)


class HeadlineChangeOut(Schema):
    """One sentence of the compare headline and its figures (`stats.HeadlineChange`).

    `change` is null where nothing was computed (no shared eval, or two deltas that measure
    different things); its interval is null where none can be computed, `no_interval` why.
    """

    sentence: str
    change: DeltaOut | None = Field(alias="delta")
    no_interval: str


class SettingDifferenceOut(Schema):
    setting: str
    before: str
    after: str


class CompareOut(Schema):
    # Reads a `reading.compare.Comparison`: the two iterations and `stats.IterationComparison`.
    before: int = Field(alias="before.number")
    after: int = Field(alias="after.number")
    before_label: str = Field(alias="result.before_label")
    after_label: str = Field(alias="result.after_label")
    #: The treatment's change (or, for two conditions, the second's against the first).
    verdict: str
    #: The change of the treatment − control delta, first on the page; null for two conditions.
    delta_change_verdict: HeadlineChangeOut | None = Field(alias="headline.delta_change")
    treatment_change_verdict: HeadlineChangeOut = Field(alias="headline.treatment_change")
    #: Agent model, judge model, harness or mode where the two iterations differ.
    differences: list[SettingDifferenceOut] = Field(alias="headline.differences")
    #: The paired statistics as computed (a zero-width interval included): the verdicts above
    #: say what can be concluded from them.
    treatment_change: DeltaOut | None = Field(alias="result.treatment_change")
    delta_change: DeltaOut | None = Field(alias="result.delta_change")
    warnings: list[str]
    evals: list[EvalChangeOut] = Field(alias="result.evals")
    flips: list[FlipOut] = Field(alias="result.flips")


class ManyColumnOut(Schema):
    # Reads a `reading.compare_many.Column`.
    number: int
    label: str
    mode: str = Field(alias="iteration.mode")
    agent_model: str = Field(alias="iteration.agent_model")
    harness: str = Field(alias="iteration.harness")
    treatment: str = Field(alias="side.treatment")
    control: str | None = Field(alias="side.control")
    #: The iteration's own treatment − control delta, as its page shows it.
    delta: DeltaOut | None
    #: Why the delta has no interval (or there is no delta); "" when it has one.
    no_interval: str


class ManyCellOut(Schema):
    score: float | None
    #: score − the first column's; null in the first column or where either is missing.
    change: float | None


class ManyRowOut(Schema):
    eval_id: str
    name: str
    #: The treatment score's move from the first column to the last.
    direction: str
    cells: list[ManyCellOut]


class CompareManyOut(Schema):
    # Reads a `reading.compare_many.ManyComparison`.
    iterations: list[int] = Field(alias="numbers")
    columns: list[ManyColumnOut]
    #: Each neighbouring pair, oldest first, as the two-iteration compare endpoint gives it.
    neighbours: list[CompareOut]
    evals: list[ManyRowOut] = Field(alias="rows")


class PlacedOut(Schema):
    """One iteration the import read: the skill it was filed under, and why."""

    skill: str
    iteration: str
    folder: str
    why: str


class ImportedIterationOut(Schema):
    skill: str
    number: int
    label: str
    #: The iteration's page, its pull-request summary (Markdown) and its JUnit file.
    url: str | None
    summary_url: str | None
    junit_url: str | None


class ImportOut(Schema):
    # Reads an `importing.ImportReport`.
    summary: str
    counts: dict[str, dict[str, int]]
    notes: list[str]
    #: With keep_going: one line per iteration or skill folder that was refused.
    rejected: list[str]
    #: Folders holding result files that were not imported, each with the reason.
    unimported: list[str]
    #: Each iteration read, with the skill it was filed under and why (the --dry-run plan).
    placed: list[PlacedOut]
    #: Each iteration the import created or updated (none in a dry run).
    iterations: list[ImportedIterationOut]

    @staticmethod
    def resolve_summary(report: Any) -> str:
        return report.summary()

    @staticmethod
    def resolve_iterations(report: Any) -> list[dict[str, Any]]:
        return [] if report.dry_run else imported_iterations(report.written)

    @staticmethod
    def resolve_placed(report: Any) -> list[dict[str, str]]:
        return [
            {"skill": skill, "iteration": label, "folder": folder, "why": why}
            for skill, label, folder, why in report.placed
        ]

    @staticmethod
    def resolve_counts(report: Any) -> dict[str, dict[str, int]]:
        return {kind: dict(counter) for kind, counter in report.counts.items()}


class ErrorOut(Schema):
    detail: str
