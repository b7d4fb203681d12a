"""Dashboard pages. Every view's state is in its URL, so any address can be shared."""

from __future__ import annotations

import hashlib

from django import forms
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

from grading.models import Review

from .analysis import cache_stamp, eval_magic_benchmark
from .importing import ImportFailure
from .importing.uploads import UploadTooLarge, import_upload
from .models import Condition, Iteration, Run, Skill
from .names import findable
from .overview import skill_rows, skill_trends, sort_rows
from .reports import FILTERS, compare, detail_stamp, iteration_detail, previous_iteration


def get_skill(name: str) -> Skill:
    try:
        if not findable(name):
            raise Skill.DoesNotExist
        return Skill.objects.get(name=name)
    except Skill.DoesNotExist:
        raise Http404(f"No skill named “{name}”.") from None


def get_iteration(skill: Skill, number: int) -> Iteration:
    try:
        # Light: the recorded documents (tens of KB of JSON) load only if a view reads them.
        return Iteration.objects.light().get(skill=skill, number=number)
    except Iteration.DoesNotExist:
        raise Http404(f"{skill.name} has no iteration #{number}.") from None


class OverviewForm(forms.Form):
    q = forms.CharField(required=False)
    sort = forms.ChoiceField(
        required=False,
        choices=[
            (k, k)
            for k in (
                "name",
                "-name",
                "delta",
                "-delta",
                "updated",
                "-updated",
                "warnings",
                "-warnings",
            )
        ],
    )


@require_GET
@vary_on_headers("HX-Request")
def overview(request: HttpRequest) -> HttpResponse:
    form = OverviewForm(request.GET)
    query, sort = "", "-updated"
    if form.is_valid():
        query, sort = form.cleaned_data["q"], form.cleaned_data["sort"] or sort
    rows = sort_rows(skill_rows(query=query), sort)
    template = "runs/overview.html"
    if request.htmx:
        template += "#skill-table"
    return render(
        request,
        template,
        {
            "rows": rows,
            "form": form,
            "query": query,
            "sort": sort,
            "any_skills": bool(rows) or Skill.objects.exists(),
        },
    )


@require_GET
def skill_page(request: HttpRequest, skill: str) -> HttpResponse:
    found = get_skill(skill)
    rows, figures = skill_trends(found)
    return render(request, "runs/skill.html", {"skill": found, "rows": rows, "figures": figures})


class IterationFilterForm(forms.Form):
    tag = forms.CharField(required=False)
    only = forms.MultipleChoiceField(
        required=False,
        choices=[
            ("failures", "only failures"),
            ("flaky", "only flaky"),
            ("changed", "only changed vs previous"),
        ],
        widget=forms.CheckboxSelectMultiple,
    )


#: How long a rendered iteration page body is kept; an import or a review replaces it.
PAGE_BODY_CACHE_SECONDS = 24 * 3600


@require_GET
@vary_on_headers("HX-Request")
def iteration_page(request: HttpRequest, skill: str, number: int) -> HttpResponse:
    iteration = get_iteration(get_skill(skill), number)
    form = IterationFilterForm(request.GET)
    tag, only = "", set()
    if form.is_valid():
        tag, only = form.cleaned_data["tag"], set(form.cleaned_data["only"])
    previous = previous_iteration(iteration)
    partial = "matrix" if request.htmx else "body"
    # The body (or the matrix fragment) is the same for every visitor, with nothing per user
    # and no CSRF token, and changes only when this iteration or the one before is saved (an
    # import or a review moves its stamp). Rendering it is most of the page's cost.
    key = None
    if form.is_valid():
        state = f"{detail_stamp(iteration, previous)}:{partial}:{tag}:{sorted(only)}"
        key = f"evalsite:iteration-page:v1:{hashlib.sha256(state.encode()).hexdigest()}"
    body = cache.get(key) if key else None
    if body is None:
        detail = iteration_detail(iteration, previous)
        body = render_to_string(
            f"runs/iteration.html#{partial}",
            {
                "skill": iteration.skill,
                "iteration": iteration,
                "detail": detail,
                "summary": detail.summary,
                "rows": detail.filtered(tag=tag, only=only),
                "form": form,
                "filters": FILTERS,
                "reviews": _reviews(iteration),
            },
        )
        if key:
            cache.set(key, body, PAGE_BODY_CACHE_SECONDS)
    if request.htmx:
        return HttpResponse(body)
    return render(
        request,
        "runs/iteration.html",
        {"skill": iteration.skill, "iteration": iteration, "body": body},
    )


def _reviews(iteration: Iteration) -> list[Review]:
    reviews = Review.objects.filter(run__iteration=iteration)
    # Joining each run to its condition reads every run's row (transcripts inline on
    # SQLite): 10+ ms. Most iterations have no review; asking first is an index lookup.
    if not reviews.exists():
        return []
    return list(reviews.select_related("run__condition", "author").order_by("created_at"))


@require_GET
def benchmark_json(request: HttpRequest, skill: str, number: int) -> JsonResponse:
    iteration = get_iteration(get_skill(skill), number)
    try:
        data = eval_magic_benchmark(iteration)
    except ValueError as exc:
        raise Http404(str(exc)) from None
    return JsonResponse(data, json_dumps_params={"indent": 2, "ensure_ascii": False})


class CompareForm(forms.Form):
    a = forms.IntegerField(min_value=1)
    b = forms.IntegerField(min_value=1)
    ca = forms.CharField(required=False)
    cb = forms.CharField(required=False)


@require_GET
def compare_page(request: HttpRequest, skill: str) -> HttpResponse:
    found = get_skill(skill)
    iterations = list(Iteration.objects.filter(skill=found).light().order_by("number"))
    form = CompareForm(request.GET or None)
    if not (form.is_bound and form.is_valid()):
        if not form.is_bound and len(iterations) >= 2:
            # No choice yet: suggest the latest iteration against the one before.
            form = CompareForm(initial={"a": iterations[-2].number, "b": iterations[-1].number})
        return render(request, "runs/compare.html", _compare_context(found, iterations, form))
    data = form.cleaned_data
    before = get_iteration(found, data["a"])
    after = get_iteration(found, data["b"])
    for iteration, name in ((before, data["ca"]), (after, data["cb"])):
        if name and not iteration.conditions.filter(name=name).exists():
            raise Http404(f"Iteration #{iteration.number} has no condition “{name}”.")
    # A comparison is ~150 ms of statistics and rendering, and the same for every visitor
    # (no form that writes, nothing per user) until one of the skill's iterations is saved:
    # every iteration's stamp (the picker lists them all) and the choice key the cache.
    stamps = ",".join(cache_stamp(i) for i in iterations)
    state = f"{stamps}|{data['a']}|{data['b']}|{data['ca']}|{data['cb']}"
    key = f"evalsite:compare-page:v1:{hashlib.sha256(state.encode()).hexdigest()}"
    body = cache.get(key)
    if body is None:
        comparison = compare(
            before, after, before_condition=data["ca"] or None, after_condition=data["cb"] or None
        )
        body = render_to_string(
            "runs/compare.html#body", _compare_context(found, iterations, form, comparison)
        )
        cache.set(key, body, PAGE_BODY_CACHE_SECONDS)
    return render(request, "runs/compare.html", {"skill": found, "body": body})


def _compare_context(
    skill: Skill, iterations: list[Iteration], form: forms.Form, comparison: object = None
) -> dict[str, object]:
    conditions = sorted(
        set(Condition.objects.filter(iteration__skill=skill).values_list("name", flat=True))
    )
    return {
        "skill": skill,
        "iterations": iterations,
        "conditions": conditions,
        "form": form,
        "comparison": comparison,
    }


def _eval_runs(iteration: Iteration, eval_id: str):
    return (
        Run.objects.filter(iteration=iteration, eval_id=eval_id)
        .select_related("condition", "grading", "eval_case")
        .prefetch_related("grading__results", "reviews__author")
        .defer("conversation", "tool_invocations")
        .order_by("condition__position", "run_index")
    )


#: How long a rendered eval body is kept; any import or review of the iteration replaces it.
EVAL_BODY_CACHE_SECONDS = 24 * 3600


@require_GET
def eval_page(request: HttpRequest, skill: str, number: int, eval_id: str) -> HttpResponse:
    iteration = get_iteration(get_skill(skill), number)
    # The body (definition and every run's card) is the same for every visitor: no form, no
    # CSRF token, nothing per user. Rendering ten cards is most of the page's cost, and the
    # cards change only when the iteration is saved (an import or a review bumps its stamp).
    digest = hashlib.sha256(eval_id.encode()).hexdigest()[:32]
    key = f"evalsite:eval-body:v1:{cache_stamp(iteration)}:{digest}"
    body = cache.get(key)
    if body is None:
        body = _eval_body(iteration, eval_id)
        cache.set(key, body, EVAL_BODY_CACHE_SECONDS)
    return render(
        request,
        "runs/eval.html",
        {"skill": iteration.skill, "iteration": iteration, "eval_id": eval_id, "body": body},
    )


def _eval_body(iteration: Iteration, eval_id: str) -> str:
    runs = list(_eval_runs(iteration, eval_id)) if findable(eval_id) else []
    if not runs:
        raise Http404(
            f"Iteration #{iteration.number} of {iteration.skill.name} has no eval “{eval_id}”."
        )
    columns: dict[str, list[Run]] = {}
    for run in runs:
        columns.setdefault(run.condition.name, []).append(run)
    return render_to_string(
        "runs/eval.html#body",
        {
            "skill": iteration.skill,
            "iteration": iteration,
            "eval_id": eval_id,
            "case": runs[0].eval_case,
            "columns": columns,
        },
    )


def get_run(skill: str, number: int, eval_id: str, condition: str, run_index: int) -> Run:
    iteration = get_iteration(get_skill(skill), number)
    try:
        if not (findable(eval_id) and findable(condition)):
            raise Run.DoesNotExist
        return (
            Run.objects.select_related("condition", "grading", "eval_case", "iteration__skill")
            .prefetch_related("grading__results", "reviews__author")
            .get(
                iteration=iteration,
                eval_id=eval_id,
                condition__name=condition,
                run_index=run_index,
            )
        )
    except Run.DoesNotExist:
        raise Http404(
            f"Iteration #{number} of {skill} has no run {run_index} of “{eval_id}” "
            f"under {condition}."
        ) from None


@require_GET
def run_page(
    request: HttpRequest, skill: str, number: int, eval_id: str, condition: str, run: int
) -> HttpResponse:
    found = get_run(skill, number, eval_id, condition, run)
    return render(
        request,
        "runs/run.html",
        {
            "skill": found.iteration.skill,
            "iteration": found.iteration,
            "eval_id": eval_id,
            "case": found.eval_case,
            "run": found,
        },
    )


@require_GET
def conversation_fragment(
    request: HttpRequest, skill: str, number: int, eval_id: str, condition: str, run: int
) -> HttpResponse:
    """A run's conversation alone, loaded on demand into the eval page by htmx."""
    found = get_run(skill, number, eval_id, condition, run)
    return render(request, "runs/run.html#conversation", {"run": found})


class UploadForm(forms.Form):
    archive = forms.FileField(
        help_text="A .zip or .tar.gz of a workspace, iteration or skill folder"
    )
    dry_run = forms.BooleanField(required=False, label="Dry run: check it, save nothing")
    keep_going = forms.BooleanField(
        required=False,
        label="Keep going: import each valid iteration, list the rejected ones",
    )


@require_http_methods(["GET", "POST"])
def import_page(request: HttpRequest) -> HttpResponse:
    """Upload a workspace archive through the browser: the importer's report, or its error."""
    report, error, status = None, "", 200
    if request.method == "POST":
        form = UploadForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                report = import_upload(
                    form.cleaned_data["archive"],
                    dry_run=form.cleaned_data["dry_run"],
                    keep_going=form.cleaned_data["keep_going"],
                )
            except ImportFailure as exc:
                error, status = exc.message, 413 if isinstance(exc, UploadTooLarge) else 400
        else:
            status = 400
    else:
        form = UploadForm()
    return render(
        request, "runs/import.html", {"form": form, "report": report, "error": error}, status=status
    )
