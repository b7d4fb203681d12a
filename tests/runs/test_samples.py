"""The iteration page's data, counted by the database, equals the statistics over its rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from runs import stats
from runs.importing import import_workspace
from runs.models import AssertionResult, Iteration
from runs.reading.samples import assertion_outcomes, assertion_tallies

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def test_tallies_counted_in_sql_equal_those_of_every_outcome_overrides_included() -> None:
    import_workspace([ROOT / "runs" / "sample"])
    result = AssertionResult.objects.filter(is_meta=False).select_related("grading__run").first()
    result.override_passed = not result.passed
    result.save(update_fields=["override_passed"])
    for iteration in Iteration.objects.all():
        expected = stats.assertion_tallies(assertion_outcomes([iteration]))
        assert assertion_tallies(iteration) == expected, iteration
    assert any(t.flaky for it in Iteration.objects.all() for t in assertion_tallies(it))
