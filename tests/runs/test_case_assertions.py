"""Assertions from any evals.json dialect; expectation slugs equal the importer's."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from runs import case_assertions as assertions
from runs.case_assertions import case_assertions, judge_rubric
from runs.importing import definitions


def test_expectation_ids_are_stable_slugs() -> None:
    assert assertions.slugify("Runs the tests -- twice!") == "runs-the-tests-twice"
    assert assertions.slugify("???") == "expectation"
    assert assertions.slugify("x" * 100) == "x" * 80
    assert assertions.unique_slugs(["Is short", "Is short!", "Other", "is SHORT"]) == [
        "is-short",
        "is-short-2",
        "other",
        "is-short-3",
    ]


@given(st.lists(st.text(max_size=120), max_size=6))
def test_expectation_ids_are_unique_and_url_safe(texts: list[str]) -> None:
    slugs = assertions.unique_slugs(texts)
    assert len(set(slugs)) == len(slugs)
    assert all(slug and set(slug) <= set("abcdefghijklmnopqrstuvwxyz0123456789-") for slug in slugs)


def test_swl_and_skill_creator_cases_give_the_importers_assertions() -> None:
    swl = {
        "id": 1,
        "prompt": "p",
        "expectations": ["Names the file", "Names the file", "Runs the tests!"],
        "grading_guidance": "Quote the message.",
    }
    creator = {
        "id": 2,
        "prompt": "p",
        "expected_output": "e",
        "files": [],
        "assertions": ["Output is a CSV", {"id": "own-id", "text": "Has a header row"}],
    }
    raw = json.dumps({"skill_name": "s", "evals": [creator]}).encode()
    _, parsed = definitions.parse_evals_json(raw, display="evals.json")
    assert parsed["2"].assertions == [
        {
            "id": "output-is-a-csv",
            "type": "llm_judge",
            "text": "Output is a CSV",
            "rubric": "Output is a CSV",
        },
        {
            "id": "own-id",
            "type": "llm_judge",
            "text": "Has a header row",
            "rubric": "Has a header row",
        },
    ]
    assert case_assertions(swl)[0] == {
        "id": "names-the-file",
        "type": "llm_judge",
        "text": "Names the file",
        "rubric": "Names the file",
        "grading_guidance": "Quote the message.",
    }
    assert [a["id"] for a in case_assertions(swl)] == [
        "names-the-file",
        "names-the-file-2",
        "runs-the-tests",
    ]


def test_eval_magic_assertions_are_kept_as_they_are(real_fixtures: Path) -> None:
    evals_json = real_fixtures / "slow-powers/working-in-isolation/evals/evals.json"
    case = json.loads(evals_json.read_text())["evals"][0]
    assert case_assertions(case) == case["assertions"]


def test_the_judge_rubric_carries_the_grading_guidance() -> None:
    (assertion,) = assertions.judge_assertions(["Cites a line"], guidance="Line numbers count.")
    assert judge_rubric(assertion) == "Cites a line\n\nGrading guidance:\nLine numbers count."
    assert judge_rubric({"rubric": "Plain"}) == "Plain"
