"""Dashboard pages. Every view's state is in its URL, so any address can be shared.

The costly regions of each page are `{% cache %}` blocks in its template, keyed on the
dashboard's generation (runs.generation: new on every import, review and admin change;
every template has it from runs.context_processors) and on the page's state, the query
string. So a view looks up what its URL names and
hands the template its data lazily (`SimpleLazyObject`): the statistics are computed
only when a cached region is missing. What varies per visitor (the header, the Share
form, review forms) stays outside those regions.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

from .importing import (
    ImportFailure,
    ImportReport,
    Staged,
    UploadTooLarge,
    import_staged,
    import_upload,
    stage_upload,
)
from .models import Condition, Iteration, Review, Run, Skill
from .names import findable
from .reading.benchmark import eval_magic_benchmark
from .reading.compare import compare
from .reading.iteration import LIST_FIRST_ITEMS, MATRIX_FIRST_ROWS, iteration_detail
from .reading.overview import skill_rows, sort_rows
from .reading.skill import skill_trends
from .transcript import transcript_context


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

    def choice(self) -> tuple[str, str]:
        """(query, sort) as asked; the defaults when the query string is not valid."""
        if not self.is_valid():
            return "", "-updated"
        return self.cleaned_data["q"], self.cleaned_data["sort"] or "-updated"


@require_GET
@vary_on_headers("HX-Request")
def overview(request: HttpRequest) -> HttpResponse:
    form = OverviewForm(request.GET)
    query, sort = form.choice()
    template_name = "runs/overview.html"
    if _fragment(request):
        template_name += "#skill-table"
    context = {
        "form": form,
        "query": query,
        "sort": sort,
        "rows": SimpleLazyObject(lambda: sort_rows(skill_rows(query=query), sort)),
        "any_skills": Skill.objects.exists(),
    }
    return render(request, template_name, context)


@require_GET
def skill_page(request: HttpRequest, skill: str) -> HttpResponse:
    found = Skill.objects.get_by_name_or_404(skill)
    context = {
        "skill": found,
        "iterations": found.iterations.count(),
        "trends": SimpleLazyObject(lambda: skill_trends(found)),
    }
    return render(request, "runs/skill.html", context)


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
    #: "all": the whole matrix; by default the first MATRIX_FIRST_ROWS rows and a count.
    rows = forms.ChoiceField(required=False, choices=[("", "first rows"), ("all", "all rows")])

    def filters(self) -> dict[str, Any]:
        """The matrix filters asked for; none when the query string is not valid."""
        if not self.is_valid():
            return {"tag": "", "only": set()}
        return {"tag": self.cleaned_data["tag"], "only": set(self.cleaned_data["only"])}

    def limit(self) -> int | None:
        """How many matrix rows to show: None for all of them."""
        show_all = self.is_valid() and self.cleaned_data["rows"] == "all"
        return None if show_all else MATRIX_FIRST_ROWS


def _fragment(request: HttpRequest) -> bool:
    """An htmx request for part of a page; not htmx restoring a page it has no copy of."""
    return bool(request.htmx) and not request.htmx.history_restore_request


@require_GET
@vary_on_headers("HX-Request")
def iteration_page(request: HttpRequest, skill: str, number: int) -> HttpResponse:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    form = IterationFilterForm(request.GET)
    detail = SimpleLazyObject(lambda: iteration_detail(iteration))
    template_name = "runs/iteration.html"
    if _fragment(request):
        template_name += "#matrix"
    context = {
        "skill": iteration.skill,
        "iteration": iteration,
        "form": form,
        "detail": detail,
        "matrix": SimpleLazyObject(lambda: detail.matrix(**form.filters(), limit=form.limit())),
        "list_limit": LIST_FIRST_ITEMS,
        "reviews": SimpleLazyObject(lambda: _reviews(iteration)),
    }
    return render(request, template_name, context)


@require_GET
@vary_on_headers("HX-Request")
def iteration_list(request: HttpRequest, skill: str, number: int, kind: str) -> HttpResponse:
    """An iteration's assertion classes or flaky assertions in full: a page, or (htmx) the
    list alone, which the iteration page's "all N" link loads in place of its first few."""
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    template_name = f"runs/_{kind}.html" if _fragment(request) else "runs/iteration_list.html"
    context = {
        "skill": iteration.skill,
        "iteration": iteration,
        "kind": kind,
        "detail": SimpleLazyObject(lambda: iteration_detail(iteration)),
        "limit": None,
    }
    return render(request, template_name, context)


def _reviews(iteration: Iteration) -> list[Review]:
    reviews = Review.objects.filter(run__iteration=iteration)
    # Joining each run to its condition reads every run's row (transcripts inline on
    # SQLite): 10+ ms. Most iterations have no review; asking first is an index lookup.
    if not reviews.exists():
        return []
    return list(reviews.select_related("run__condition", "author").order_by("created_at"))


@require_GET
def benchmark_json(request: HttpRequest, skill: str, number: int) -> JsonResponse:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
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
    found = Skill.objects.get_by_name_or_404(skill)
    form = CompareForm(request.GET or None)
    comparison = None
    if form.is_bound and form.is_valid():
        comparison = _comparison(found, **form.cleaned_data)
    elif not form.is_bound:
        # No choice yet: the latest iteration against the one before, at an address that
        # says so (a teammate opening the link sees the same comparison).
        latest = found.iterations.order_by("-number").values_list("number", flat=True)[:2]
        if len(latest) == 2:
            # reverse(), not request.path: the path arrives decoded ("a?b#c" for a%3Fb%23c).
            address = reverse("runs:compare", args=[found.name])
            return redirect(f"{address}?a={latest[1]}&b={latest[0]}")
    names = Condition.objects.filter(iteration__skill=found).values_list("name", flat=True)
    context = {
        "skill": found,
        "iterations": Iteration.objects.filter(skill=found).light().order_by("number"),
        "conditions": SimpleLazyObject(lambda: sorted(set(names))),
        "form": form,
        "comparison": comparison,
    }
    return render(request, "runs/compare.html", context)


def _comparison(skill: Skill, *, a: int, b: int, ca: str, cb: str) -> SimpleLazyObject:
    """The comparison asked for, computed when first read; 404 for what does not exist."""
    before = Iteration.objects.get_by_number_or_404(skill, a)
    after = Iteration.objects.get_by_number_or_404(skill, b)
    for iteration, name in ((before, ca), (after, cb)):
        if name and not iteration.conditions.filter(name=name).exists():
            raise Http404(f"Iteration #{iteration.number} has no condition “{name}”.")
    return SimpleLazyObject(
        lambda: compare(before, after, before_condition=ca or None, after_condition=cb or None)
    )


@require_GET
def eval_page(request: HttpRequest, skill: str, number: int, eval_id: str) -> HttpResponse:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    if not (findable(eval_id) and iteration.runs.filter(eval_id=eval_id).exists()):
        raise Http404(
            f"Iteration #{iteration.number} of {iteration.skill.name} has no eval “{eval_id}”."
        )
    context = {
        "skill": iteration.skill,
        "iteration": iteration,
        "eval_id": eval_id,
        "eval_name": iteration.eval_name(eval_id),
        "runs": iteration.runs.for_eval_page(eval_id),
    }
    return render(request, "runs/eval.html", context)


@require_GET
def run_page(
    request: HttpRequest, skill: str, number: int, eval_id: str, condition: str, run: int
) -> HttpResponse:
    found = Run.objects.get_by_address_or_404(skill, number, eval_id, condition, run)
    return render(
        request,
        "runs/run.html",
        {
            **transcript_context(found),
            "skill": found.iteration.skill,
            "iteration": found.iteration,
            "eval_id": eval_id,
            "eval_name": found.eval_name,
            "case": found.eval_case,
        },
    )


class UploadForm(forms.Form):
    archive = forms.FileField(
        help_text="A .zip or .tar.gz of a workspace, iteration or skill folder"
    )
    dry_run = forms.BooleanField(required=False, label="Dry run: check it, save nothing")
    keep_going = forms.BooleanField(
        required=False,
        label="Keep going: import each valid iteration, list the rejected ones",
    )


class ConfirmForm(forms.Form):
    """The import of an archive staged by a preview, named by its token."""

    token = forms.CharField(max_length=22)
    keep_going = forms.BooleanField(required=False)


#: Session key: the stages this session previewed (token → archive name).
STAGED = "evalsite_staged_uploads"


@require_http_methods(["GET", "POST"])
def import_page(request: HttpRequest) -> HttpResponse:
    """Upload a workspace archive through the browser: a preview of the plan first (the
    archive staged), then the import on confirmation; or at once; the report, or its error."""
    report, error, status, staged = None, "", 200, None
    form = UploadForm()
    if request.method == "POST" and "token" in request.POST:
        report, error, status = _confirm(request)
    elif request.method == "POST":
        form = UploadForm(request.POST, request.FILES)
        if form.is_valid():
            preview = request.POST.get("action") == "preview"
            try:
                if preview:
                    staged = stage_upload(form.cleaned_data["archive"])
                    request.session[STAGED] = {
                        **request.session.get(STAGED, {}),
                        staged.token: staged.name,
                    }
                    report = import_staged(
                        staged, dry_run=True, keep_going=form.cleaned_data["keep_going"]
                    )
                else:
                    report = import_upload(
                        form.cleaned_data["archive"],
                        dry_run=form.cleaned_data["dry_run"],
                        keep_going=form.cleaned_data["keep_going"],
                    )
            except ImportFailure as exc:
                error, status = exc.message, 413 if isinstance(exc, UploadTooLarge) else 400
                staged = None
        else:
            status = 400
    context = {
        "form": form,
        "report": report,
        "error": error,
        "staged": staged,
        "keep_going": form["keep_going"].value(),
    }
    return render(request, "runs/import.html", context, status=status)


def _confirm(request: HttpRequest) -> tuple[ImportReport | None, str, int]:
    """Import the staged archive a preview of this session named."""
    confirm = ConfirmForm(request.POST)
    known: dict[str, str] = request.session.get(STAGED, {})
    if not confirm.is_valid() or confirm.cleaned_data["token"] not in known:
        return None, "This preview is not yours or has expired: upload the archive again.", 400
    token = confirm.cleaned_data["token"]
    request.session[STAGED] = {k: v for k, v in known.items() if k != token}
    try:
        report = import_staged(
            Staged(token, known[token]),
            dry_run=False,
            keep_going=confirm.cleaned_data["keep_going"],
        )
    except ImportFailure as exc:
        return None, exc.message, 400
    return report, "", 200
