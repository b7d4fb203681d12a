"""A large import leaves the database's planner statistics describing what it wrote."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from runs.importing import analyze, import_workspace
from runs.models import Run
from tests.factories import eval_magic_iteration


def last_analysed() -> object:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT last_analyze FROM pg_stat_user_tables WHERE relname = %s",
            [Run._meta.db_table],
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_an_import_over_the_threshold_analyses_the_result_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = analyze.refresh_after_import
    monkeypatch.setattr(analyze, "RUNS_WORTH_ANALYSING", 2)
    monkeypatch.setattr(
        "runs.importing.workspace.refresh_after_import",
        lambda n: calls.append(n) or real(n),
    )
    before = last_analysed() if connection.vendor == "postgresql" else None

    import_workspace([eval_magic_iteration(tmp_path / "small", skill="small")])
    import_workspace([eval_magic_iteration(tmp_path / "small", skill="small")])  # all skipped

    runs = Run.objects.count()
    assert runs >= 2 and calls == [runs, 0]
    if connection.vendor == "postgresql":
        assert last_analysed() is not None and last_analysed() != before


def test_a_small_import_leaves_the_statistics_to_the_database() -> None:
    assert analyze.refresh_after_import(analyze.RUNS_WORTH_ANALYSING - 1) is False
