"""The compare page: the two sides chosen in the query string, or the latest two; its
per-eval table sorted, filtered and cut through the query string too. With `iterations`
in the query it is the page for three or more (views/compare_many.py)."""

from __future__ import annotations

from django import forms
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from ..models import Iteration, Skill
from ..reading.compare import (
    COMPARE_FIRST_ROWS,
    DIRECTIONS,
    SORT_KEYS,
    compare,
    compare_table,
    condition_names,
)
from .compare_many import compare_many_page
from .htmx import wants_fragment


class CompareForm(forms.Form):
    a = forms.IntegerField(min_value=1)
    b = forms.IntegerField(min_value=1)
    ca = forms.CharField(required=False)
    cb = forms.CharField(required=False)


class CompareTableForm(forms.Form):
    """How the per-eval table is shown: sorted, filtered by direction, all rows or the first."""

    sort = forms.ChoiceField(
        required=False, choices=[(k, k) for key in SORT_KEYS for k in (key, f"-{key}")]
    )
    show = forms.ChoiceField(required=False, choices=[(d, d) for d in DIRECTIONS])
    rows = forms.ChoiceField(required=False, choices=[("all", "all rows")])

    def state(self) -> dict[str, object]:
        """compare_table's keywords as asked; the defaults when the query is not valid."""
        if not self.is_valid():
            return {"sort": "eval", "show": "", "limit": COMPARE_FIRST_ROWS}
        data = self.cleaned_data
        limit = None if data["rows"] == "all" else COMPARE_FIRST_ROWS
        return {"sort": data["sort"] or "eval", "show": data["show"], "limit": limit}


@require_GET
@vary_on_headers("HX-Request")
def compare_page(request: HttpRequest, skill: str) -> HttpResponse:
    found = Skill.objects.get_by_name_or_404(skill)
    if "iterations" in request.GET:
        return compare_many_page(request, found)
    form = CompareForm(request.GET or None)
    comparison = table = None
    state = CompareTableForm(request.GET).state()
    if form.is_bound and form.is_valid():
        comparison = _comparison(found, **form.cleaned_data)
        table = SimpleLazyObject(lambda: compare_table(comparison, **state))
    elif not form.is_bound and (latest := _latest_two(found)):
        return redirect(latest)
    template_name = "runs/compare.html"
    if comparison is not None and wants_fragment(request):
        template_name += "#compare-table"
    context = {
        "skill": found,
        "iterations": Iteration.objects.filter(skill=found).light().in_display_order(),
        "conditions": SimpleLazyObject(lambda: condition_names(found)),
        "form": form,
        "comparison": comparison,
        "table": table,
        "sort": state["sort"],
        # Each diff link is scoped (`scoped_url`): a shared view links only diffs it opens.
        "diffs_open": comparison is not None,
        "directions": DIRECTIONS,
    }
    return render(request, template_name, context)


def _latest_two(skill: Skill) -> str:
    """No choice yet: the latest iteration against the one before, at an address that says
    so (a teammate opening the link sees the same comparison); "" with fewer than two."""
    latest = skill.iterations.order_by("-position", "-number").values_list("number", flat=True)[:2]
    if len(latest) < 2:
        return ""
    # reverse(), not request.path: the path arrives decoded ("a?b#c" for a%3Fb%23c).
    address = reverse("runs:compare", args=[skill.name])
    return f"{address}?a={latest[1]}&b={latest[0]}"


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
