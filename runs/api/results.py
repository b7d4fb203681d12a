"""Skills, iterations, trends, benchmarks and comparisons: the numbers the pages show."""

# No `from __future__ import annotations`: ninja and pydantic read these annotations at
# runtime to build the request parsers and the OpenAPI document.

from typing import Any

from django.http import Http404, HttpRequest
from ninja import Query, Router, Schema
from ninja.errors import HttpError
from ninja.pagination import paginate

from accounts.auth import READ_AUTH

from ..models import Iteration, Skill
from ..names import findable
from ..reading.benchmark import eval_magic_benchmark
from ..reading.compare import Comparison, compare
from ..reading.compare_many import ChoiceRefused, ManyComparison, choose_iterations, compare_many
from ..reading.overview import SkillRow, skill_rows
from ..reading.summaries import IterationSummary, summarise_iterations
from .pagination import LazyPage, Pagination
from .schemas import CompareManyOut, CompareOut, ErrorOut, IterationOut, SkillOut

router = Router(tags=["results"], auth=READ_AUTH)


def summaries(iterations: list[Iteration]) -> list[IterationSummary]:
    """Each iteration's summary, in order, computed together."""
    by_pk = summarise_iterations(iterations)
    return [by_pk[iteration.pk] for iteration in iterations]


@router.get(
    "/skills",
    response=list[SkillOut],
    summary="Every skill with its latest iteration",
    operation_id="runs_api_list_skills",
)
@paginate(Pagination)
def list_skills(request: HttpRequest) -> list[SkillRow]:
    # The overview's rows: every skill's latest iteration and summary in a fixed number of
    # queries, as the overview page shows them.
    return skill_rows()


@router.get(
    "/skills/{skill}",
    response=SkillOut,
    summary="One skill",
    operation_id="runs_api_get_skill_detail",
)
def get_skill_detail(request: HttpRequest, skill: str) -> SkillRow:
    found = Skill.objects.get_by_name_or_404(skill)
    return next(r for r in skill_rows(query=found.name) if r.skill.pk == found.pk)


@router.get(
    "/skills/{skill}/trends",
    response=list[IterationOut],
    summary="Every iteration's statistics in order: what the skill page's charts draw",
    operation_id="runs_api_trends",
)
def trends(request: HttpRequest, skill: str) -> list[IterationSummary]:
    return summaries(Iteration.objects.trend_of(Skill.objects.get_by_name_or_404(skill)))


@router.get(
    "/skills/{skill}/iterations",
    response=list[IterationOut],
    summary="Iterations",
    operation_id="runs_api_list_iterations",
)
@paginate(Pagination)
def list_iterations(request: HttpRequest, skill: str) -> LazyPage:
    found = Skill.objects.get_by_name_or_404(skill)
    return LazyPage(
        Iteration.objects.filter(skill=found)
        .select_related("skill")
        .light()
        .order_by("-position", "-number"),
        summaries,
    )


@router.get(
    "/skills/{skill}/iterations/{number}",
    response=IterationOut,
    summary="One iteration: per-condition scores, the delta with its interval, the verdict",
    operation_id="runs_api_iteration_detail",
)
def iteration_detail(request: HttpRequest, skill: str, number: int) -> IterationSummary:
    return summaries([Iteration.objects.get_by_address_or_404(skill, number)])[0]


@router.get(
    "/skills/{skill}/iterations/{number}/benchmark",
    response=dict[str, Any],
    summary="The benchmark.json eval-magic would write (SPEC §4.1)",
    operation_id="runs_api_benchmark",
)
def benchmark(request: HttpRequest, skill: str, number: int) -> dict[str, Any]:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    try:
        return eval_magic_benchmark(iteration)
    except ValueError as exc:
        raise Http404(str(exc)) from None


class CompareQuery(Schema):
    a: int
    b: int
    ca: str | None = None
    cb: str | None = None


@router.get(
    "/skills/{skill}/compare",
    response=CompareOut,
    summary="Two iterations (or two conditions, with ca and cb) side by side",
    operation_id="runs_api_compare_iterations",
)
def compare_iterations(request: HttpRequest, skill: str, query: Query[CompareQuery]) -> Comparison:
    found = Skill.objects.get_by_name_or_404(skill)
    before = Iteration.objects.get_by_number_or_404(found, query.a)
    after = Iteration.objects.get_by_number_or_404(found, query.b)
    for iteration, name in ((before, query.ca), (after, query.cb)):
        if name and not (findable(name) and iteration.conditions.filter(name=name).exists()):
            raise Http404(f"Iteration #{iteration.number} has no condition “{name}”.")
    return compare(before, after, before_condition=query.ca, after_condition=query.cb)


class CompareManyQuery(Schema):
    #: Iteration numbers, comma-separated ("3,5,7"): two to twelve.
    iterations: str


@router.get(
    "/skills/{skill}/compare-many",
    response={200: CompareManyOut, 400: ErrorOut, 404: ErrorOut},
    summary="Two to twelve iterations side by side, in display order, verdicts between neighbours",
    operation_id="runs_api_compare_many",
)
def compare_many_iterations(
    request: HttpRequest, skill: str, query: Query[CompareManyQuery]
) -> ManyComparison:
    found = Skill.objects.get_by_name_or_404(skill)
    try:
        iterations = choose_iterations(found, [query.iterations])
    except ChoiceRefused as refused:
        raise HttpError(404 if refused.missing else 400, str(refused)) from None
    return compare_many(iterations)
