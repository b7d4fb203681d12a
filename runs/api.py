"""The JSON API's read side, and imports: the numbers the pages show, from the same modules."""

# No `from __future__ import annotations`: ninja and pydantic read these annotations at
# runtime to build the request parsers and the OpenAPI document.

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.http import Http404, HttpRequest
from django.urls import reverse
from ninja import File, Form, Query, Router, Schema, Status
from ninja.files import UploadedFile
from ninja.pagination import LimitOffsetPagination, paginate
from pydantic import Field

from accounts.auth import READ_AUTH, WRITE_AUTH
from grading.models import Review

from . import stats
from .analysis import ConditionSummary, IterationSummary, eval_magic_benchmark, summarise_iterations
from .importing import ImportFailure, ImportReport
from .importing.uploads import UploadTooLarge, import_files, import_upload
from .models import Iteration, Run, Skill
from .names import address, findable
from .overview import SkillRow, skill_rows
from .reports import compare

router = Router(tags=["results"], auth=READ_AUTH)


class Pagination(LimitOffsetPagination):
    """limit/offset with bounds: ninja's own offset is unbounded, and a 20-digit offset
    overflows the database's integers (a 500 that schemathesis found)."""

    class Input(Schema):
        limit: int = Field(100, ge=1, le=500)
        offset: int = Field(0, ge=0, le=2**31 - 1)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_limit=500, **kwargs)


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


class DeltaOut(Schema):
    treatment: str
    control: str
    mean: float
    n: int
    se: float | None
    interval: IntervalOut | None
    p_value: float | None
    signal: str


class IterationOut(Schema):
    number: int
    label: str
    mode: str
    source_kind: str
    agent_model: str
    judge_model: str
    generated_at: datetime | None
    validity_warnings: list[str]
    conditions: list[ConditionOut]
    treatment: str | None
    control: str | None
    delta: DeltaOut | None
    verdict: str
    gain_per_1k_tokens: float | None
    evals: list[str]
    zero_assertion_evals: list[str]
    #: None for a name stored before names were validated, that no address can hold.
    url: str | None


class SkillOut(Schema):
    name: str
    description: str
    iterations: int
    latest: IterationOut | None
    #: None for a name stored before names were validated, that no address can hold.
    url: str | None


def _interval(interval: stats.Interval | None) -> dict[str, float] | None:
    return None if interval is None else {"low": interval.low, "high": interval.high}


def _proportion(value: stats.Proportion | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return {
        "successes": value.successes,
        "n": value.n,
        "rate": value.rate,
        "interval": _interval(value.interval),
    }


def _condition(summary: ConditionSummary) -> dict[str, Any]:
    score = summary.score
    return {
        "name": summary.name,
        "role": summary.role,
        "loads_skill": summary.loads_skill,
        "score": None
        if score is None
        else {
            "mean": score.mean,
            "n_evals": score.n_evals,
            "n_runs": score.n_runs,
            "interval": _interval(score.interval),
            "per_eval": dict(score.per_eval),
        },
        "sentence": summary.sentence,
        "runs": summary.runs,
        "graded": summary.graded,
        "errored": summary.errored,
        "invocation": _proportion(summary.invocation),
        "false_trigger": _proportion(summary.false_trigger),
        "mean_tokens": summary.mean_tokens,
        "mean_duration_ms": summary.mean_duration_ms,
    }


def _delta(delta: stats.PairedDelta | None) -> dict[str, Any] | None:
    if delta is None:
        return None
    return {
        "treatment": delta.treatment,
        "control": delta.control,
        "mean": delta.mean,
        "n": delta.n,
        "se": delta.se,
        "interval": _interval(delta.interval),
        "p_value": delta.p_value,
        "signal": delta.signal,
    }


def iteration_out(iteration: Iteration, summary: IterationSummary) -> dict[str, Any]:
    return {
        "number": iteration.number,
        "label": iteration.label,
        "mode": iteration.mode,
        "source_kind": iteration.source_kind,
        "agent_model": iteration.agent_model,
        "judge_model": iteration.judge_model,
        "generated_at": iteration.generated_at,
        "validity_warnings": list(iteration.validity_warnings),
        "conditions": [_condition(c) for c in summary.conditions],
        "treatment": summary.treatment.name if summary.treatment else None,
        "control": summary.control.name if summary.control else None,
        "delta": _delta(summary.delta),
        "verdict": summary.verdict,
        "gain_per_1k_tokens": summary.gain_per_1k_tokens,
        "evals": list(summary.evals),
        "zero_assertion_evals": list(summary.zero_assertion_evals),
        "url": address(iteration.get_absolute_url),
    }


class LazyPage:
    """A queryset whose rows are converted only once pagination has sliced out its page."""

    def __init__(self, queryset: Any, convert: Callable[[list[Any]], list[Any]]) -> None:
        self.queryset = queryset
        self.convert = convert

    def __len__(self) -> int:
        return self.queryset.count()

    def __getitem__(self, index: slice) -> list[Any]:
        return self.convert(list(self.queryset[index]))


def _iterations_out(iterations: list[Iteration]) -> list[dict[str, Any]]:
    summaries = summarise_iterations(iterations)
    return [iteration_out(i, summaries[i.pk]) for i in iterations]


@router.get("/skills", response=list[SkillOut], summary="Every skill with its latest iteration")
@paginate(Pagination)
def list_skills(request: HttpRequest) -> Any:
    # The overview's rows: every skill's latest iteration and summary in a fixed number of
    # queries, as the overview page shows them.
    return [_skill_out(row) for row in skill_rows()]


def _skill_out(row: SkillRow) -> dict[str, Any]:
    return {
        "name": row.skill.name,
        "description": row.skill.description,
        "iterations": row.iterations,
        "latest": iteration_out(row.latest, row.summary) if row.latest and row.summary else None,
        "url": address(lambda: reverse("runs:skill", args=[row.skill.name])),
    }


@router.get("/skills/{skill}", response=SkillOut, summary="One skill")
def get_skill_detail(request: HttpRequest, skill: str) -> dict[str, Any]:
    found = Skill.objects.get_by_name_or_404(skill)
    return _skill_out(next(r for r in skill_rows(query=found.name) if r.skill.pk == found.pk))


@router.get(
    "/skills/{skill}/trends",
    response=list[IterationOut],
    summary="Every iteration's statistics in order: what the skill page's charts draw",
)
def trends(request: HttpRequest, skill: str) -> list[dict[str, Any]]:
    return _iterations_out(Iteration.objects.trend_of(Skill.objects.get_by_name_or_404(skill)))


@router.get("/skills/{skill}/iterations", response=list[IterationOut], summary="Iterations")
@paginate(Pagination)
def list_iterations(request: HttpRequest, skill: str) -> Any:
    found = Skill.objects.get_by_name_or_404(skill)
    return LazyPage(
        Iteration.objects.filter(skill=found).select_related("skill").light().order_by("-number"),
        _iterations_out,
    )


@router.get(
    "/skills/{skill}/iterations/{number}",
    response=IterationOut,
    summary="One iteration: per-condition scores, the delta with its interval, the verdict",
)
def iteration_detail(request: HttpRequest, skill: str, number: int) -> dict[str, Any]:
    return _iterations_out([Iteration.objects.get_by_address_or_404(skill, number)])[0]


@router.get(
    "/skills/{skill}/iterations/{number}/benchmark",
    response=dict[str, Any],
    summary="The benchmark.json eval-magic would write (SPEC §4.1)",
)
def benchmark(request: HttpRequest, skill: str, number: int) -> dict[str, Any]:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    try:
        return eval_magic_benchmark(iteration)
    except ValueError as exc:
        raise Http404(str(exc)) from None


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


class RunOut(Schema):
    eval_id: str
    condition: str
    run_index: int
    status: str
    total_tokens: int | None
    duration_ms: int | None
    skill_called: bool | None
    grading: GradingOut | None
    reviews: list[ReviewOut]
    #: None for a name stored before names were validated, that no address can hold.
    url: str | None


class RunDetailOut(RunOut):
    final_message: str
    conversation: list[dict[str, Any]]
    tool_invocations: list[dict[str, Any]]


def review_out(review: Review) -> dict[str, Any]:
    return {
        "kind": review.kind,
        "source": review.source,
        "author": review.author.get_username() if review.author else None,
        "assertion_id": review.assertion_id,
        "original_passed": review.original_passed,
        "overridden_passed": review.overridden_passed,
        "text": review.text,
        "created_at": review.created_at,
    }


def run_out(run: Run) -> dict[str, Any]:
    grading = getattr(run, "grading", None)
    return {
        "eval_id": run.eval_id,
        "condition": run.condition.name,
        "run_index": run.run_index,
        "status": run.status,
        "total_tokens": run.total_tokens,
        "duration_ms": run.duration_ms,
        "skill_called": run.skill_called,
        "grading": None
        if grading is None
        else {
            "passed": grading.passed,
            "failed": grading.failed,
            "total": grading.total,
            "pass_rate": grading.pass_rate,
            "summary_computed": grading.summary_computed,
            "original_summary": grading.original_summary,
            "skill_invoked": grading.skill_invoked,
            "results": [
                {
                    "id": r.pk,
                    "assertion_id": r.assertion_id,
                    "is_meta": r.is_meta,
                    "passed": r.passed,
                    "override_passed": r.override_passed,
                    "effective_passed": r.effective_passed,
                    "evidence": r.evidence,
                    "confidence": r.confidence,
                    "needs_review": r.needs_review,
                    "grader": r.grader,
                    "text": r.text,
                }
                for r in grading.results.all()
            ],
        },
        "reviews": [review_out(review) for review in run.reviews.all()],
        "url": address(run.get_absolute_url),
    }


class RunFilter(Schema):
    eval_id: str | None = None
    condition: str | None = None


@router.get(
    "/skills/{skill}/iterations/{number}/runs",
    response=list[RunOut],
    summary="The iteration's runs with their gradings (conversations left out)",
)
@paginate(Pagination)
def list_runs(request: HttpRequest, skill: str, number: int, filters: Query[RunFilter]) -> Any:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    runs = (
        Run.objects.filter(iteration=iteration)
        .select_related("condition", "grading", "iteration__skill")
        .prefetch_related("grading__results", "reviews__author")
        .defer("conversation", "tool_invocations", "artifacts")
        .order_by("eval_id", "condition__position", "run_index")
    )
    if filters.eval_id:
        runs = runs.filter(eval_id=filters.eval_id)
    if filters.condition:
        runs = runs.filter(condition__name=filters.condition)
    if not all(findable(value or "") for value in (filters.eval_id, filters.condition)):
        runs = runs.none()
    return LazyPage(runs, lambda page: [run_out(run) for run in page])


@router.get(
    "/skills/{skill}/iterations/{number}/runs/{eval_id}/{condition}/{run}",
    response=RunDetailOut,
    summary="One run with its grading, evidence and conversation",
)
def run_detail(
    request: HttpRequest, skill: str, number: int, eval_id: str, condition: str, run: int
) -> dict[str, Any]:
    found = Run.objects.get_by_address_or_404(skill, number, eval_id, condition, run)
    return {
        **run_out(found),
        "final_message": found.final_message,
        "conversation": list(found.conversation or []),
        "tool_invocations": list(found.tool_invocations or []),
    }


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


class FlipOut(Schema):
    eval_id: str
    assertion_id: str
    role: str
    direction: str
    rate_before: float
    rate_after: float


class CompareOut(Schema):
    before: int
    after: int
    before_label: str
    after_label: str
    verdict: str
    treatment_change: DeltaOut | None
    delta_change: DeltaOut | None
    warnings: list[str]
    evals: list[EvalChangeOut]
    flips: list[FlipOut]


class CompareQuery(Schema):
    a: int
    b: int
    ca: str | None = None
    cb: str | None = None


@router.get(
    "/skills/{skill}/compare",
    response=CompareOut,
    summary="Two iterations (or two conditions, with ca and cb) side by side",
)
def compare_iterations(
    request: HttpRequest, skill: str, query: Query[CompareQuery]
) -> dict[str, Any]:
    found = Skill.objects.get_by_name_or_404(skill)
    before = Iteration.objects.get_by_number_or_404(found, query.a)
    after = Iteration.objects.get_by_number_or_404(found, query.b)
    for iteration, name in ((before, query.ca), (after, query.cb)):
        if name and not (findable(name) and iteration.conditions.filter(name=name).exists()):
            raise Http404(f"Iteration #{iteration.number} has no condition “{name}”.")
    result = compare(before, after, before_condition=query.ca, after_condition=query.cb)
    change = result.result
    return {
        "before": before.number,
        "after": after.number,
        "before_label": change.before_label,
        "after_label": change.after_label,
        "verdict": result.verdict,
        "treatment_change": _delta(change.treatment_change),
        "delta_change": _delta(change.delta_change),
        "warnings": result.warnings,
        "evals": [
            {
                "eval_id": e.eval_id,
                "treatment_before": e.treatment_before,
                "treatment_after": e.treatment_after,
                "treatment_change": e.treatment_change.value if e.treatment_change else None,
                "treatment_change_interval": _interval(e.treatment_change.interval)
                if e.treatment_change
                else None,
                "delta_before": e.delta_before,
                "delta_after": e.delta_after,
                "delta_change": e.delta_change.value if e.delta_change else None,
                "p_value": e.p_value,
                "adjusted_p": e.adjusted_p,
                "badge": e.badge,
            }
            for e in change.evals
        ],
        "flips": [
            {
                "eval_id": f.eval_id,
                "assertion_id": f.assertion_id,
                "role": str(f.role),
                "direction": f.direction,
                "rate_before": f.before.rate,
                "rate_after": f.after.rate,
            }
            for f in change.flips
        ],
    }


class ImportOut(Schema):
    summary: str
    counts: dict[str, dict[str, int]]
    notes: list[str]
    #: With keep_going: one line per iteration or skill folder that was refused.
    rejected: list[str]
    #: Folders holding result files that were not imported, each with the reason.
    unimported: list[str]


class ErrorOut(Schema):
    detail: str


@router.post(
    "/imports",
    auth=WRITE_AUTH,
    response={201: ImportOut, 400: ErrorOut, 413: ErrorOut},
    summary="Import a workspace archive (.zip or .tar.gz): all of it, or nothing",
    description=(
        "With `keep_going=true`, each valid iteration is imported in its own transaction and "
        "each refused one is listed in `rejected` (the response is still 201)."
    ),
)
def create_import(
    request: HttpRequest, archive: File[UploadedFile], keep_going: Form[bool] = False
) -> Any:
    return _imported(lambda: import_upload(archive, keep_going=keep_going))


@router.post(
    "/imports/files",
    auth=WRITE_AUTH,
    response={201: ImportOut, 400: ErrorOut, 413: ErrorOut},
    summary="Import one iteration folder's files: each file with its relative path",
    description=(
        "Multipart: `files` (repeated) and `paths` (repeated, same order), e.g. "
        "`my-skill/iteration-3/conditions.json`. An eval-magic iteration's skill is the "
        "folder above `iteration-N`. `keep_going=true` as for `POST /imports`."
    ),
)
def create_import_from_files(
    request: HttpRequest,
    files: File[list[UploadedFile]],
    paths: Form[list[str]],
    keep_going: Form[bool] = False,
) -> Any:
    if len(paths) != len(files):
        return Status(400, {"detail": f"paths: {len(paths)} paths for {len(files)} files"})
    pairs = list(zip(paths, files, strict=True))
    return _imported(lambda: import_files(pairs, keep_going=keep_going))


def _imported(run_import: Callable[[], ImportReport]) -> Status:
    try:
        report = run_import()
    except UploadTooLarge as exc:
        return Status(413, {"detail": exc.message})
    except ImportFailure as exc:
        return Status(400, {"detail": exc.message})
    return Status(
        201,
        {
            "summary": report.summary(),
            "counts": {kind: dict(counter) for kind, counter in report.counts.items()},
            "notes": report.notes,
            "rejected": report.rejected,
            "unimported": report.unimported,
        },
    )
