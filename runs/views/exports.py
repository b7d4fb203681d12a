"""Downloads of what the pages show: the matrix, an iteration's runs, an eval's table, the
trend; each as CSV or JSON (the address's extension), with the page's filters.

They sit under the pages' own addresses, so a share link opens exactly the downloads of
the views it opens (the access middleware reads the same URL kwargs as for the pages).
"""

from __future__ import annotations

from django import forms
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET

from ..exporting import download_response
from ..models import Iteration, Skill
from ..names import findable
from ..reading.exports import MatrixChoice, eval_table, matrix_table, runs_table, trend_table
from .iteration import IterationFilterForm

Download = HttpResponse | StreamingHttpResponse


def matrix_choice(form: IterationFilterForm) -> MatrixChoice:
    """The matrix's filters and order from the iteration page's form; paging left out."""
    options = form.matrix_options()
    return MatrixChoice(
        tag=options["tag"],
        only=frozenset(options["only"]),
        movement=options["movement"],
        sort=options["sort"],
    )


class RunFilterForm(forms.Form):
    """One eval's or one condition's runs, as the API's runs list filters them. No length
    limit: an id too long to exist finds no run, where an invalid field would find all."""

    eval_id = forms.CharField(required=False, strip=False)
    condition = forms.CharField(required=False, strip=False)

    def choice(self) -> dict[str, str]:
        self.is_valid()
        return {key: self.cleaned_data.get(key) or "" for key in ("eval_id", "condition")}


@require_GET
def matrix_export(request: HttpRequest, skill: str, number: int, fmt: str) -> Download:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    choice = matrix_choice(IterationFilterForm(request.GET))
    return download_response(matrix_table(iteration, choice), fmt)


@require_GET
def runs_export(request: HttpRequest, skill: str, number: int, fmt: str) -> Download:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    filters = RunFilterForm(request.GET).choice()
    if not all(findable(value) for value in filters.values()):
        raise Http404("No run has that eval id or condition.")
    choice = matrix_choice(IterationFilterForm(request.GET))
    return download_response(runs_table(iteration, **filters, choice=choice), fmt)


@require_GET
def eval_export(request: HttpRequest, skill: str, number: int, eval_id: str, fmt: str) -> Download:
    iteration = Iteration.objects.get_by_address_or_404(skill, number)
    if not (findable(eval_id) and iteration.runs.filter(eval_id=eval_id).exists()):
        raise Http404(
            f"Iteration #{iteration.number} of {iteration.skill.name} has no eval “{eval_id}”."
        )
    return download_response(eval_table(iteration, eval_id), fmt)


@require_GET
def trend_export(request: HttpRequest, skill: str, fmt: str) -> Download:
    return download_response(trend_table(Skill.objects.get_by_name_or_404(skill)), fmt)
