"""A large import's search index, built just after its pages' rows are committed.

Until it is complete, search says the iteration is still being indexed; once done, the
index holds exactly what a rebuild would write; a process that died on the way leaves a
marker that the next import or `manage.py searchindex --pending` completes.
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.utils import timezone

from runs.importing import import_workspace
from runs.models import Run
from runs.search import pending
from runs.search.index import rebuild
from runs.search.models import PendingIndex, SearchDocument
from runs.search.query import parse_query
from runs.search.searching import Filters, search
from tests.factories import skill_creator_iteration

pytestmark = pytest.mark.django_db

SKILL = "creator-skill"


@pytest.fixture
def large_from_two_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Count an iteration of two runs or more as large: indexed after its commit."""
    monkeypatch.setattr(pending, "DEFER_FROM_RUNS", 2)


def documents() -> list[tuple[object, ...]]:
    """Every search document's content, by run."""
    columns = ("run_id", "condition", "outcome", "prompt", "final_message", "evidence", "notes")
    return list(SearchDocument.objects.order_by("run_id").values_list(*columns))


def fts_matches(word: str) -> int:
    if connection.vendor != "sqlite":
        return len(search(parse_query(word), Filters()).hits)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM search_fts WHERE search_fts MATCH %s", [word])
        return cursor.fetchone()[0]


def test_a_large_iteration_is_still_indexing_until_its_commit_has_run(
    tmp_path: Path, large_from_two_runs: None, client: Client, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        import_workspace([skill_creator_iteration(tmp_path)])

    # The pages' rows are there; the index is not yet, and search says so.
    assert Run.objects.count() == 4
    assert SearchDocument.objects.count() == 0
    assert PendingIndex.objects.count() == 1
    results = search(parse_query("total"), Filters())
    assert results.indexing == [f"{SKILL} #1"]
    page = client.get("/search/", {"q": "total"}).content.decode()
    assert "Still indexing creator-skill #1" in page
    assert client.get("/api/search", {"q": "total"}).json()["indexing"] == [f"{SKILL} #1"]

    for callback in callbacks:
        callback()

    assert PendingIndex.objects.count() == 0
    assert len(search(parse_query("total"), Filters()).hits) == 4
    assert search(parse_query("total"), Filters()).indexing == []
    assert "Still indexing" not in client.get("/search/", {"q": "total"}).content.decode()
    assert client.get("/api/search", {"q": "total"}).json()["indexing"] == []


def test_the_index_built_after_the_commit_is_what_a_rebuild_writes(
    tmp_path: Path, large_from_two_runs: None, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        import_workspace([skill_creator_iteration(tmp_path)])
    built, matches = documents(), fts_matches("words")

    rebuild()

    assert len(built) == 4
    assert documents() == built
    assert fts_matches("words") == matches == 4


def test_a_small_iteration_is_indexed_in_the_import_itself(tmp_path: Path) -> None:
    import_workspace([skill_creator_iteration(tmp_path)])

    assert SearchDocument.objects.count() == 4
    assert PendingIndex.objects.count() == 0


def test_a_dry_run_leaves_no_marker(tmp_path: Path, large_from_two_runs: None) -> None:
    import_workspace([skill_creator_iteration(tmp_path)], dry_run=True)

    assert PendingIndex.objects.count() == 0


def test_searchindex_pending_completes_what_a_dead_process_left(
    tmp_path: Path, large_from_two_runs: None, django_capture_on_commit_callbacks
) -> None:
    # The import committed, and its process died before indexing: its callbacks never ran.
    with django_capture_on_commit_callbacks(execute=False):
        import_workspace([skill_creator_iteration(tmp_path)])
    out = StringIO()

    call_command("searchindex", "--pending", stdout=out)

    assert out.getvalue().strip() == "search index completed for 1 iteration"
    assert PendingIndex.objects.count() == 0
    assert SearchDocument.objects.count() == 4


def test_a_live_claim_is_left_alone_and_a_stale_one_taken_over(
    tmp_path: Path, large_from_two_runs: None, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        import_workspace([skill_creator_iteration(tmp_path)])
    PendingIndex.objects.update(claimed_at=timezone.now())

    assert pending.complete_pending() == 0  # another process is indexing it
    assert SearchDocument.objects.count() == 0

    PendingIndex.objects.update(claimed_at=timezone.now() - pending.CLAIM_EXPIRES - timedelta(1))
    assert pending.complete_pending() == 1
    assert SearchDocument.objects.count() == 4


def test_the_next_large_import_completes_an_earlier_leftover(
    tmp_path: Path, large_from_two_runs: None, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        import_workspace([skill_creator_iteration(tmp_path / "a", skill="first-skill")])
    with django_capture_on_commit_callbacks(execute=True):
        import_workspace([skill_creator_iteration(tmp_path / "b", skill="second-skill")])

    assert PendingIndex.objects.count() == 0
    assert SearchDocument.objects.count() == 8


def test_a_failed_indexing_keeps_the_marker_and_frees_its_claim(
    tmp_path: Path, large_from_two_runs: None, django_capture_on_commit_callbacks, monkeypatch
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        import_workspace([skill_creator_iteration(tmp_path)])

    def broken(iteration_id: int) -> int:
        raise RuntimeError("disk full")

    monkeypatch.setattr(pending, "index_iteration", broken)
    with pytest.raises(RuntimeError):
        pending.complete_pending()

    marker = PendingIndex.objects.get()
    assert marker.claimed_at is None  # free for the next attempt
    assert SearchDocument.objects.count() == 0
    monkeypatch.undo()
    monkeypatch.setattr(pending, "DEFER_FROM_RUNS", 2)
    assert pending.complete_pending() == 1


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's write-ahead log")
def test_the_log_checkpoints_again_once_every_large_iteration_is_indexed(
    tmp_path: Path, large_from_two_runs: None, django_capture_on_commit_callbacks
) -> None:
    skill_creator_iteration(tmp_path, label="iteration-1")
    skill_creator_iteration(tmp_path, label="iteration-2")
    with django_capture_on_commit_callbacks(execute=True):
        import_workspace([tmp_path / f"{SKILL}-workspace"])

    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        (pages,) = cursor.fetchone()
    assert pages > 0 and not pending._AUTOCHECKPOINT  # on again, as before the import
    assert SearchDocument.objects.count() == 8
    assert PendingIndex.objects.count() == 0
