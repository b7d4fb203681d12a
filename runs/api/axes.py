"""A skill across harnesses and models: the axes page's matrix and trends, as JSON."""

# No `from __future__ import annotations`: ninja and pydantic read these annotations at
# runtime to build the request parsers and the OpenAPI document.

from typing import Any, Literal

from django.http import HttpRequest
from django.urls import reverse
from ninja import Router, Schema

from accounts.auth import READ_AUTH

from ..models import Skill
from ..names import address
from ..reading.axes import Combination, SkillAxes, skill_axes
from .schemas import DeltaOut, ProportionOut

router = Router(tags=["results"], auth=READ_AUTH)


class AxesModeOut(Schema):
    mode: str
    iterations: int


class AxesPointOut(Schema):
    """One iteration of a combination: its delta (null where two conditions did not run)."""

    number: int
    label: str
    delta: DeltaOut | None
    verdict: str
    url: str | None


class AxesCombinationOut(Schema):
    #: As the iterations recorded them; "" where they did not.
    harness: str
    model: str
    #: Iterations of this combination in the mode.
    iterations: int
    #: The latest iteration's number, delta, verdict sentence, runs and invocation rate.
    latest: AxesPointOut
    runs: int
    invocation: ProportionOut | None
    #: +1 the skill significantly helps, -1 it significantly hurts, 0 neither.
    direction: int
    #: Oldest first: the delta per iteration.
    trend: list[AxesPointOut]

    @staticmethod
    def resolve_iterations(combination: Combination) -> int:
        return len(combination.summaries)

    @staticmethod
    def resolve_latest(combination: Combination) -> dict[str, Any]:
        return _point(combination.latest)

    @staticmethod
    def resolve_trend(combination: Combination) -> list[dict[str, Any]]:
        return [_point(summary) for summary in combination.summaries]


class AxesNamedOut(Schema):
    harness: str
    model: str
    #: The number of the combination's latest iteration.
    iteration: int

    @staticmethod
    def resolve_iteration(combination: Combination) -> int:
        return combination.iteration.number


class AxesSignFlipOut(Schema):
    #: Combinations where the skill significantly helps, and where it significantly hurts.
    helps: list[AxesNamedOut]
    hurts: list[AxesNamedOut]
    sentence: str


class SkillAxesOut(Schema):
    skill: str
    mode: str
    modes: list[AxesModeOut]
    #: The matrix's rows and columns, in its order.
    harnesses: list[str]
    models: list[str]
    combinations: list[AxesCombinationOut]
    #: Where the effect's sign differs between combinations, significant on each; or null.
    sign_flip: AxesSignFlipOut | None
    #: The axes page.
    url: str | None

    @staticmethod
    def resolve_skill(axes: SkillAxes) -> str:
        return axes.skill.name

    @staticmethod
    def resolve_modes(axes: SkillAxes) -> list[dict[str, Any]]:
        return [{"mode": mode, "iterations": n} for mode, _, n in axes.modes]

    @staticmethod
    def resolve_url(axes: SkillAxes) -> str | None:
        return address(lambda: f"{reverse('runs:axes', args=[axes.skill.name])}?mode={axes.mode}")


def _point(summary: Any) -> dict[str, Any]:
    iteration = summary.iteration
    return {
        "number": iteration.number,
        "label": iteration.label,
        "delta": summary.delta,
        "verdict": summary.verdict,
        "url": address(
            lambda: reverse("runs:iteration", args=[iteration.skill.name, iteration.number])
        ),
    }


@router.get(
    "/skills/{skill}/axes",
    response=SkillAxesOut,
    summary="A skill across harnesses and models: the latest delta and verdict per harness × "
    "model, and each combination's trend",
    operation_id="runs_api_skill_axes",
)
def axes(
    request: HttpRequest, skill: str, mode: Literal["new-skill", "revision"] | None = None
) -> SkillAxes:
    return skill_axes(Skill.objects.get_by_name_or_404(skill), mode=mode)
