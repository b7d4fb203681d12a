"""What the models answer for themselves: lookups by address, the previous iteration."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.http import Http404

from runs.importing import import_workspace
from runs.models import Iteration, Run, Skill
from runs.roles import Role, role_for_condition
from runs.stats import condition_role
from tests.factories import eval_magic_iteration

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_iterations(tmp_path: Path) -> Skill:
    for label, stamp in (
        ("iteration-1", "2026-01-01T00:00:00Z"),
        ("iteration-2", "2026-01-02T00:00:00Z"),
    ):
        folder = eval_magic_iteration(
            tmp_path / "ws",
            skill="demo",
            label=label,
            cells={("alpha", "with_skill"): [{"a": True}]},
            conditions=["with_skill"],
            timestamp=stamp,
        )
        import_workspace([folder])
    return Skill.objects.get()


def test_lookups_find_what_an_address_names(two_iterations: Skill) -> None:
    assert Skill.objects.get_by_name_or_404(two_iterations.name) == two_iterations
    iteration = Iteration.objects.get_by_address_or_404(two_iterations.name, 2)
    assert iteration.number == 2
    run = Run.objects.get_by_address_or_404(two_iterations.name, 2, "alpha", "with_skill", 1)
    assert (run.iteration, run.eval_name) == (iteration, "alpha")


@pytest.mark.parametrize(
    ("lookup", "message"),
    [
        (lambda: Skill.objects.get_by_name_or_404("nope"), "No skill named “nope”."),
        (lambda: Iteration.objects.get_by_address_or_404("demo", 9), "demo has no iteration #9."),
        (
            lambda: Run.objects.get_by_address_or_404("demo", 1, "alpha", "without_skill", 1),
            "Iteration #1 of demo has no run 1 of “alpha” under without_skill.",
        ),
    ],
)
def test_a_lookup_that_finds_nothing_says_what_is_missing(
    two_iterations: Skill, lookup: object, message: str
) -> None:
    with pytest.raises(Http404, match=message):
        lookup()  # type: ignore[operator]


def test_an_iteration_knows_the_one_before_it(two_iterations: Skill) -> None:
    first, second = Iteration.objects.filter(skill=two_iterations).order_by("number")
    assert second.previous() == first
    assert first.previous() is None


def test_one_role_table_serves_the_models_and_the_statistics() -> None:
    assert role_for_condition("old_skill") is Role.CONTROL
    assert role_for_condition("mine") is Role.OTHER
    assert condition_role("new_skill") == "treatment"
    assert condition_role("mine") is None
