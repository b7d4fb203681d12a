"""The search form: the query and its filters, all in the address (`?q=…&condition=…`)."""

from __future__ import annotations

from django import forms

from runs.models import Skill

from .models import Outcome
from .query import Query, QueryError, parse_query
from .searching import PAGE_SIZE, Filters


class SearchForm(forms.Form):
    q = forms.CharField(required=False, label="Search", max_length=500, strip=True)
    iteration = forms.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    condition = forms.CharField(required=False, max_length=100)
    outcome = forms.ChoiceField(
        required=False,
        choices=[("", "passed or failed"), (Outcome.PASS, "passed"), (Outcome.FAIL, "failed")],
    )
    page = forms.IntegerField(required=False, min_value=1, max_value=10_000)

    def __init__(self, *args, skill: Skill | None = None, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.skill = skill
        if skill is None:
            del self.fields["iteration"]  # numbers are per skill

    def clean_q(self) -> Query | None:
        text = self.cleaned_data["q"]
        if not text:
            return None
        try:
            return parse_query(text)
        except QueryError as exc:
            raise forms.ValidationError(str(exc)) from None

    def filters(self) -> Filters:
        data = self.cleaned_data
        return Filters(
            skill_id=self.skill.pk if self.skill else None,
            iteration_number=data.get("iteration"),
            condition=data.get("condition") or "",
            outcome=data.get("outcome") or "",
        )

    def offset(self) -> int:
        return ((self.cleaned_data.get("page") or 1) - 1) * PAGE_SIZE
