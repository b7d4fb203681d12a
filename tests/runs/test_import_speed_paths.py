"""The large-import paths give what the plain ones give: rows inserted without model
instances read back as bulk_create wrote them. (Their speed is measured by bench/.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from runs.importing import import_workspace
from runs.importing.columns import insert_rows
from runs.models import Grading, Iteration, Run
from tests.factories import skill_creator_iteration

pytestmark = pytest.mark.django_db


def test_inserted_rows_read_back_as_bulk_create_writes_them(tmp_path: Path) -> None:
    import_workspace([skill_creator_iteration(tmp_path)])
    run = Run.objects.first()
    Grading.objects.filter(run=run).delete()
    row = {"run_id": run.pk, "format": "skill-creator", "passed": 1, "failed": 0, "total": 1}

    (pk,) = insert_rows(Grading, [{**row, "pass_rate": 1, "extra": {"note": "a\u2028b"}}])

    grading = Grading.objects.get(pk=pk)
    assert type(grading.pass_rate) is float and grading.pass_rate == 1.0  # not the int 1
    assert grading.extra == {"note": "a\u2028b"}
    assert grading.regraded is None and grading.meta_total is None  # the fields' defaults
    assert grading.summary_computed is False


def test_new_ids_never_reuse_those_of_deleted_runs(tmp_path: Path) -> None:
    folder = skill_creator_iteration(tmp_path)
    import_workspace([folder])
    highest = max(Run.objects.values_list("pk", flat=True))
    Iteration.objects.all().delete()

    import_workspace([folder])

    assert min(Run.objects.values_list("pk", flat=True)) > highest
