"""One search document per run: the text search reads, and what its filters need."""

from __future__ import annotations

from django.contrib.postgres.search import SearchVectorField
from django.db import models

from runs.models import Iteration, Run, Skill


class Outcome(models.TextChoices):
    PASS = "pass", "passed every assertion"
    FAIL = "fail", "failed one or more"
    UNGRADED = "", "not graded"


class SearchDocument(models.Model):
    """What the search index holds for one run, written only by `runs.search.index`.

    The text columns are the indexed content: on SQLite the FTS5 table `search_fts` reads
    them (an external-content table, kept in step by triggers); on PostgreSQL `vector` is
    computed from them and carries the GIN index. Skill, iteration, condition and outcome
    are copied from the run so that filters never read the runs' rows (transcripts inline).
    """

    run = models.OneToOneField(
        Run, on_delete=models.CASCADE, primary_key=True, related_name="search_document"
    )
    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="+")
    iteration = models.ForeignKey(Iteration, on_delete=models.CASCADE, related_name="+")
    condition = models.CharField(max_length=100)
    outcome = models.CharField(max_length=4, choices=Outcome.choices, blank=True)
    prompt = models.TextField(blank=True)
    final_message = models.TextField(blank=True)
    evidence = models.TextField(blank=True)
    notes = models.TextField(blank=True)
    conversation = models.TextField(blank=True)
    #: PostgreSQL only (NULL on SQLite, where FTS5 holds the index).
    vector = SearchVectorField(null=True, editable=False)

    class Meta:
        indexes = [
            models.Index(fields=["skill", "iteration"]),
            # Covers the filters: a match is joined to its document by run and filtered on
            # these, and SQLite keeps the text inline, so without it every match read ~30 KB
            # of overflow pages to reach skill_id (300 ms for 18,000 matches, against 20).
            models.Index(
                fields=["run", "skill", "iteration", "condition", "outcome"],
                name="search_document_filters",
            ),
        ]

    def __str__(self) -> str:
        return f"search document of run {self.run_id}"


class PendingIndex(models.Model):
    """An iteration whose runs are written but not yet all in the search index.

    A large import commits the rows its pages need first and indexes the iteration just
    after (runs.search.index.defer_iteration); this row, written in the import's own
    transaction, is deleted in the transaction that completes the index. While it exists,
    search says the iteration is still being indexed; if the indexing process died, the row
    outlives it and the next import, or `manage.py searchindex --pending`, completes it.
    """

    iteration = models.OneToOneField(
        Iteration, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="+")
    since = models.DateTimeField()
    #: When a process took on the indexing (a conditional UPDATE decides who does); a claim
    #: older than CLAIM_EXPIRES (index.py) belonged to a process that is gone.
    claimed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"search index pending for iteration {self.iteration_id}"
