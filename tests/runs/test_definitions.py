"""Eval definitions in the three dialects of SPEC §3.4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runs.importing import ImportFailure, import_workspace
from runs.importing.definitions import detect_dialect, parse_evals_json
from runs.models import EvalCase, Skill
from tests.factories import write_json

pytestmark = pytest.mark.django_db

SWL = {
    "skill_name": "swl-skill",
    "schema_version": 1,
    "artifact_type": "skill",
    "evals": [
        {
            "id": 1,
            "prompt": "Write the migration for the new column.",
            "expectations": ["Adds a nullable column first", "Backfills in batches"],
            "grading_guidance": "Either ORM or raw SQL is fine.",
            "tags": ["migrations", "regression"],
            "weight": 2.5,
        },
        {
            "id": "rollback",
            "prompt": "Roll back the last migration safely.",
            "expectations": ["Checks for data loss before rolling back"],
        },
    ],
}


def parse(data: object) -> dict:
    return parse_evals_json(json.dumps(data).encode(), display="evals.json")[1]


def test_the_swl_dialect_becomes_judge_assertions_with_tags_and_weights() -> None:
    evals = parse(SWL)

    first = evals["1"]
    assert first.dialect == "swl"
    assert (first.tags, first.weight) == (["migrations", "regression"], 2.5)
    assert first.assertions == [
        {
            "id": "adds-a-nullable-column-first",
            "type": "llm_judge",
            "text": "Adds a nullable column first",
            "rubric": "Adds a nullable column first",
            "grading_guidance": "Either ORM or raw SQL is fine.",
        },
        {
            "id": "backfills-in-batches",
            "type": "llm_judge",
            "text": "Backfills in batches",
            "rubric": "Backfills in batches",
            "grading_guidance": "Either ORM or raw SQL is fine.",
        },
    ]
    assert evals["rollback"].weight == 1.0


def test_a_bare_skill_creator_list_with_integer_ids_is_read() -> None:
    evals = parse(
        [
            {
                "id": 0,
                "prompt": "Summarise.",
                "expected_output": "A summary.",
                "files": [],
                "expectations": ["Under 100 words"],
            },
            {"id": 1, "prompt": "Translate.", "assertions": ["Keeps names", {"text": "Is French"}]},
        ]
    )

    assert sorted(evals) == ["0", "1"]
    assert evals["0"].dialect == "skill-creator"
    assert [a["id"] for a in evals["1"].assertions] == ["keeps-names", "is-french"]


def test_eval_magic_assertions_are_kept_as_written() -> None:
    assertion = {
        "id": "tdd",
        "type": "transcript_check",
        "check": "tool_invocation_matches",
        "pattern": "Write.*test",
        "must_precede": "first_write",
    }
    evals = parse(
        {
            "skill_name": "x",
            "evals": [
                {
                    "id": "a",
                    "prompt": "p",
                    "expected_output": "e",
                    "skill_should_trigger": False,
                    "assertions": [assertion],
                }
            ],
        }
    )

    assert evals["a"].assertions == [assertion]
    assert evals["a"].skill_should_trigger is False
    assert detect_dialect({"skill_name": "x", "evals": []}) == "eval-magic"


def test_an_swl_schema_violation_names_the_pointer() -> None:
    bad = json.loads(json.dumps(SWL))
    bad["evals"][0]["weight"] = 500

    with pytest.raises(ImportFailure) as info:
        parse(bad)

    assert str(info.value).startswith("evals.json at /evals/0/weight: ")


def test_a_skill_folder_alone_imports_its_definitions_and_description(tmp_path: Path) -> None:
    folder = tmp_path / "swl-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: swl-skill\ndescription: >\n  Use when writing\n  migrations.\n---\nBody\n",
        encoding="utf-8",
    )
    write_json(folder / "evals" / "evals.json", SWL)

    report = import_workspace([folder])

    assert Skill.objects.get().description == "Use when writing migrations."
    assert EvalCase.objects.count() == 2
    assert report.counts["eval definitions"] == {"created": 2}
    assert import_workspace([folder]).counts["eval definitions"] == {"skipped": 2}


def test_a_changed_definition_is_a_new_version(tmp_path: Path) -> None:
    folder = tmp_path / "swl-skill"
    write_json(folder / "evals" / "evals.json", SWL)
    import_workspace([folder])
    changed = json.loads(json.dumps(SWL))
    changed["evals"][1]["expectations"].append("Mentions the backup")
    write_json(folder / "evals" / "evals.json", changed)

    import_workspace([folder])

    versions = EvalCase.objects.filter(eval_id="rollback").order_by("created_at")
    assert versions.count() == 2
    assert versions[0].fingerprint != versions[1].fingerprint


def test_bad_yaml_front_matter_falls_back_with_a_warning(tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: [unclosed\ndescription: Use when: the user asks\n---\n", encoding="utf-8"
    )

    report = import_workspace([folder])

    skill = Skill.objects.get()
    assert (skill.name, skill.description) == ("broken", "Use when: the user asks")
    assert any(
        note.startswith(f"{folder}/SKILL.md: front matter is not valid YAML")
        for note in report.notes
    )
