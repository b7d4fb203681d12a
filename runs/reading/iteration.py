"""The iteration page: its summary, the eval × condition matrix and the assertion lists.

The same data serves the page's matrix fragment, its full assertion lists
(`assertion_classes`, `flaky`) and the runs of one matrix cell, in a fixed number of queries.
The matrix is sorted, filtered and paged here, in Python, from the query string's choices:
a 300-eval iteration is 300 rows, and asking the database again for each order would cost
more than sorting them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from django.core.paginator import Page, Paginator

from .. import stats
from ..models import EvalCase, Iteration, Review, Run
from ..names import natural_key
from .samples import assertion_tallies, passing_runs
from .summaries import Cell, IterationSummary, summarise_iterations

#: Filters of the iteration page, in the order the form shows them.
FILTERS = ("failures", "flaky")
#: How an eval's treatment score moved since the previous iteration, as the filter links
#: list them.
MOVEMENTS = ("improved", "regressed", "unchanged", "new")
#: Matrix rows on a page of the iteration page, before "next" (about two screenfuls).
MATRIX_PAGE_ROWS = 40
#: The matrix's orders are "eval" (the ids' natural order: 2 before 10), "delta", "change"
#: (since the previous iteration) and one condition's score: SCORE_SORT and its name.
SCORE_SORT = "score:"
DEFAULT_SORT = "eval"
#: Items of each assertion list the iteration page shows before "all N".
LIST_FIRST_ITEMS = 5
#: Scores closer than this are the same score (means of pass rates, summed in any order).
SAME_SCORE = 1e-9
#: The assertion classes the iteration page lists.
SHOWN_CLASSES = frozenset(
    {
        stats.AssertionClass.TREATMENT_ONLY,
        stats.AssertionClass.CONTROL_ONLY,
        stats.AssertionClass.ALWAYS_FAIL,
        stats.AssertionClass.ALWAYS_PASS,
    }
)


@dataclass
class EvalRow:
    """One row of the matrix: an eval's cells, its delta and how it moved since before."""

    eval_id: str
    cells: list[Cell]
    treatment_score: float | None
    delta: float | None
    zero_assertions: bool
    previous_treatment: float | None
    is_new: bool
    #: The definition's tags, and whether it expects the skill not to trigger.
    tags: list[str] = field(default_factory=list)
    negative: bool = False
    #: What a person reads: the definition's name (skill-creator's `eval_name`), else the id.
    name: str = ""

    @property
    def failures(self) -> bool:
        return any(c.score is not None and c.score < 1 for c in self.cells)

    @property
    def flaky(self) -> bool:
        """Whether one of its cells holds one of the iteration's badged flaky assertions."""
        return any(c.flaky for c in self.cells)

    @property
    def change(self) -> float | None:
        """Its treatment score minus the previous iteration's; None without both."""
        if self.treatment_score is None or self.previous_treatment is None:
            return None
        return self.treatment_score - self.previous_treatment

    @property
    def movement(self) -> str:
        """One of MOVEMENTS, or "" when there is nothing to compare with."""
        if self.is_new:
            return "new"
        change = self.change
        if change is None:
            return ""
        if abs(change) < SAME_SCORE:
            return "unchanged"
        return "improved" if change > 0 else "regressed"


@dataclass
class Matrix:
    """The matrix rows a page shows of those that pass its filters, in its order."""

    rows: list[EvalRow]
    #: How many rows pass the filters (on every page together).
    total: int
    #: The order asked for, or DEFAULT_SORT when that is not one of the matrix's.
    sort: str
    #: Rows per movement among those that pass the other filters: the filter links' counts.
    movements: dict[str, int]
    #: The page shown, or None when every row is (`rows=all`).
    page: Page | None = None
    tag: str = ""
    only: frozenset[str] = frozenset()
    movement: str = ""

    @property
    def filtered(self) -> bool:
        return bool(self.tag or self.only or self.movement)


def sort_rows(rows: list[EvalRow], sort: str, conditions: list[str]) -> list[EvalRow] | None:
    """`rows` in the order `sort` names ('-' first: descending), or None when it names none.

    Rows without the value (no score, no previous iteration) come last either way; rows with
    equal values keep the order given (the matrix's: the eval ids' natural order).
    """
    values: dict[str, Callable[[EvalRow], object]] = {
        "eval": lambda row: natural_key(row.eval_id),
        "delta": lambda row: row.delta,
        "change": lambda row: row.change,
    }
    for index, name in enumerate(conditions):
        values[SCORE_SORT + name] = lambda row, i=index: row.cells[i].score
    value = values.get(sort.removeprefix("-"))
    if value is None:
        return None
    present = [r for r in rows if value(r) is not None]
    missing = [r for r in rows if value(r) is None]
    present.sort(key=value, reverse=sort.startswith("-"))
    return present + missing


@dataclass
class IterationDetail:
    """Everything the iteration page shows below its header."""

    summary: IterationSummary
    previous: Iteration | None
    conditions: list[str]
    rows: list[EvalRow]
    assertion_classes: dict[str, list[stats.AssertionContrast]]
    #: Every flaky assertion, flakiest first (`stats.rank_flaky`).
    flaky: list[stats.AssertionTally]
    #: The first of them, which the matrix badges (`stats.most_flaky`).
    badged: list[stats.AssertionTally]
    repeated: dict[str, stats.RepeatedRunScore]
    tags: list[str]

    def filtered(
        self,
        *,
        tag: str = "",
        only: set[str] | frozenset[str] = frozenset(),
        movement: str = "",
    ) -> list[EvalRow]:
        """The matrix rows that pass the page's filters, in the eval ids' natural order."""
        rows = self.rows
        if tag:
            rows = [r for r in rows if tag in r.tags]
        for name in FILTERS:
            if name in only:
                rows = [r for r in rows if getattr(r, name)]
        if movement:
            rows = [r for r in rows if r.movement == movement]
        return rows

    def matrix(
        self,
        *,
        tag: str = "",
        only: set[str] | frozenset[str] = frozenset(),
        movement: str = "",
        sort: str = DEFAULT_SORT,
        page: int | str = 1,
        paged: bool = True,
    ) -> Matrix:
        """The filtered rows in `sort` order, page `page` of them (all when not `paged`)."""
        unmoved = self.filtered(tag=tag, only=only)
        movements = Counter(r.movement for r in unmoved)
        rows = [r for r in unmoved if r.movement == movement] if movement else unmoved
        ordered = sort_rows(rows, sort, self.conditions)
        if ordered is None:
            sort, ordered = DEFAULT_SORT, rows
        shown, shown_page = ordered, None
        if paged:
            shown_page = Paginator(ordered, MATRIX_PAGE_ROWS).get_page(page)
            shown = list(shown_page.object_list)
        return Matrix(
            rows=shown,
            total=len(ordered),
            sort=sort,
            movements={name: movements[name] for name in MOVEMENTS},
            page=shown_page,
            tag=tag,
            only=frozenset(only),
            movement=movement,
        )

    @property
    def assertion_class_count(self) -> int:
        return sum(len(items) for items in self.assertion_classes.values())

    @property
    def assertion_classes_shown(self) -> int:
        """How many of them the iteration page lists, LIST_FIRST_ITEMS of each class."""
        return sum(min(len(items), LIST_FIRST_ITEMS) for items in self.assertion_classes.values())


def iteration_detail(iteration: Iteration) -> IterationDetail:
    """Everything the iteration page shows: summary, matrix, assertion analysis."""
    previous = iteration.previous()
    summaries = summarise_iterations([iteration, *([previous] if previous else [])])
    summary = summaries[iteration.pk]
    conditions = [c.name for c in summary.conditions]
    treatment = summary.treatment.name if summary.treatment else None
    control = summary.control.name if summary.control else None

    # Counted once: the flaky list and the assertion classes both read these tallies.
    tallies = assertion_tallies(iteration)
    # In the evals' natural order, which the ranking keeps among equally flaky assertions.
    order = {eval_id: natural_key(eval_id) for eval_id in {t.eval_id for t in tallies}}
    flaky = stats.rank_flaky(sorted(tallies, key=lambda t: order[t.eval_id]))
    badged = stats.most_flaky(flaky)
    flaky_by_cell: dict[tuple[str, str], list[str]] = defaultdict(list)
    for tally in badged:
        flaky_by_cell[(tally.eval_id, tally.condition)].append(tally.assertion_id)

    # The cells summarise_iterations grouped already, not a row per run.
    cells = {
        key: replace(cell, flaky=flaky_by_cell.get(key, [])) for key, cell in summary.cells.items()
    }

    previous_scores: dict[str, float] = {}
    if previous and (prev := summaries[previous.pk]).treatment and prev.treatment.score:
        previous_scores = dict(prev.treatment.score.per_eval)
    cases = _definitions(iteration)
    rows = []
    for eval_id in sorted(summary.evals, key=natural_key):
        row_cells = [cells.get((eval_id, name), Cell(name)) for name in conditions]
        by_name = {c.condition: c for c in row_cells}
        t = by_name[treatment].score if treatment else None
        c = by_name[control].score if control else None
        tags, negative, name = cases.get(eval_id, ([], False, eval_id))
        rows.append(
            EvalRow(
                eval_id=eval_id,
                cells=row_cells,
                treatment_score=t,
                delta=t - c if t is not None and c is not None else None,
                zero_assertions=eval_id in summary.zero_assertion_evals,
                previous_treatment=previous_scores.get(eval_id),
                is_new=previous is not None and eval_id not in previous_scores,
                tags=tags,
                negative=negative,
                name=name,
            )
        )

    classes: dict[str, list[stats.AssertionContrast]] = {}
    if treatment and control:
        # The four classes the page lists; "mixed" and "unpaired" hold most assertions.
        classes = {
            str(k): v
            for k, v in stats.classes_of_tallies(
                tallies, treatment=treatment, control=control
            ).items()
            if k in SHOWN_CLASSES
        }
    repeated = _repeated(iteration, conditions, cells)
    tags = sorted({tag for tags, _, _ in cases.values() for tag in tags})
    return IterationDetail(
        summary, previous, conditions, rows, classes, flaky, badged, repeated, tags
    )


def _definitions(iteration: Iteration) -> dict[str, tuple[list[str], bool, str]]:
    """eval id → (tags, negative, name) of its definition; the latest version wins."""
    return {
        eval_id: (list(tags), not should_trigger, name or eval_id)
        for eval_id, tags, should_trigger, name in EvalCase.objects.filter(
            runs__iteration=iteration
        )
        .order_by("eval_id", "created_at")
        .values_list("eval_id", "tags", "skill_should_trigger", "name")
        .distinct()
    }


def _repeated(
    iteration: Iteration, conditions: list[str], cells: dict[tuple[str, str], Cell]
) -> dict[str, stats.RepeatedRunScore]:
    """condition → its repeated-run score, for the conditions that ran every eval more than once."""
    repeated = {}
    # Asked whether or not a condition repeats: a page's queries do not depend on its data.
    passing = passing_runs(iteration)
    for name in conditions:
        runs_per_eval = [c.graded for (_, cond), c in cells.items() if cond == name]
        if runs_per_eval and min(runs_per_eval) > 1:
            counts = [(c.graded, passing.get(key, 0)) for key, c in cells.items() if key[1] == name]
            score = stats.repeated_run_score_of_counts(counts, k=min(runs_per_eval))
            if score:
                repeated[name] = score
    return repeated


def reviews_of(iteration: Iteration) -> list[Review]:
    """The reviewers' notes and overrides on the iteration's runs, oldest first."""
    reviews = Review.objects.filter(run__iteration=iteration)
    # Joining each run to its condition reads every run's row (transcripts inline on
    # SQLite): 10+ ms. Most iterations have no review; asking first is an index lookup.
    if not reviews.exists():
        return []
    return list(reviews.select_related("run__condition", "author").order_by("created_at"))


def runs_of_cell(iteration: Iteration, eval_id: str, condition: str) -> list[Run]:
    """One matrix cell's runs, as the eval page shows them (without their transcripts)."""
    return list(iteration.runs.for_eval_page(eval_id).filter(condition__name=condition))
