"""The validity warnings evalsite adds on import, and the cross-check of benchmark.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runs.importing import import_workspace
from runs.models import Iteration, Run
from runs.warnings import messages
from tests.factories import eval_magic_iteration, grading, write_json

pytestmark = pytest.mark.django_db


def warnings_of(folder: Path) -> list[str]:
    import_workspace([folder])
    return messages(Iteration.objects.get().validity_warnings)


def test_uneven_run_counts_are_named_per_eval(tmp_path: Path) -> None:
    folder = eval_magic_iteration(
        tmp_path,
        cells={
            ("alpha", "with_skill"): [{"a": True}, {"a": True}],
            ("alpha", "without_skill"): [{"a": False}],
        },
    )

    assert warnings_of(folder) == ["uneven run counts on alpha: with_skill 2, without_skill 1"]


def test_missing_gradings_are_named(tmp_path: Path) -> None:
    folder = eval_magic_iteration(
        tmp_path,
        cells={
            ("alpha", "with_skill"): [{"a": True}, None],
            ("alpha", "without_skill"): [{"a": False}, {"a": False}],
        },
    )

    assert warnings_of(folder) == ["1 run(s) have no grading: alpha/with_skill/run-2"]


def test_evals_with_zero_assertions_are_flagged(tmp_path: Path) -> None:
    folder = eval_magic_iteration(
        tmp_path, cells={("alpha", "with_skill"): [{}], ("alpha", "without_skill"): [{}]}
    )

    assert warnings_of(folder) == [
        "eval(s) with zero assertions score 0 in eval-magic's pass rate: alpha"
    ]


def test_invocation_below_100_percent_is_flagged(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)
    write_json(
        folder / "eval-alpha" / "with_skill" / "grading.json",
        grading({"a1": True, "a2": True}, skill_invoked=False),
    )

    assert warnings_of(folder) == [
        "with_skill invoked the skill in 0 of 1 run(s) (0%): the comparison is diluted"
    ]


def test_stray_writes_become_warnings(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)
    write_json(
        folder / "stray-writes.json",
        {
            "generated": "2026-05-01T10:05:00Z",
            "iteration": 1,
            "totals": {"violations": 2, "warnings": 0, "live_source_reads": 0},
            "runs": [
                {
                    "eval_id": "alpha",
                    "condition": "with_skill",
                    "violations": [
                        {"tool": "Write", "ordinal": 3, "reason": "outside", "path": "/a"},
                        {"tool": "Write", "ordinal": 5, "reason": "outside", "path": "/b"},
                    ],
                    "warnings": [],
                    "live_source_reads": [],
                }
            ],
        },
    )

    assert warnings_of(folder) == [
        "alpha/with_skill wrote 2 file(s) outside its task environment (stray-writes.json)"
    ]


def benchmark_for(pass_rates: dict[str, float]) -> dict:
    return {
        "generated": "2026-05-01T10:10:00Z",
        "mode": "new-skill",
        "conditions_compared": ["with_skill", "without_skill"],
        "missing_gradings": 0,
        "validity_warnings": [],
        "run_summary": {
            name: {
                "pass_rate": {"mean": rate, "stddev": 0, "n": 1},
                "duration_ms": {"mean": 2000, "stddev": 0, "n": 1},
                "total_tokens": {"mean": 1001, "stddev": 0, "n": 1},
                **(
                    {"skill_invocation_n": 1, "skill_invocation_rate": 1}
                    if name == "with_skill"
                    else {}
                ),
            }
            for name, rate in pass_rates.items()
        },
        "delta": {
            "direction": "with_skill - without_skill",
            "pass_rate": round(pass_rates["with_skill"] - pass_rates["without_skill"], 3),
            "duration_ms": 0,
            "total_tokens": 0,
        },
    }


def test_a_recorded_benchmark_that_matches_its_gradings_adds_nothing(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)
    write_json(folder / "benchmark.json", benchmark_for({"with_skill": 1, "without_skill": 0.5}))

    assert warnings_of(folder) == []


def test_a_recorded_benchmark_that_disagrees_is_flagged(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)
    write_json(folder / "benchmark.json", benchmark_for({"with_skill": 0.9, "without_skill": 0.5}))

    assert warnings_of(folder) == [
        "recorded benchmark.json disagrees with the gradings: "
        "run_summary.with_skill.pass_rate.mean: recorded 0.9, recomputed 1; "
        "delta.pass_rate: recorded 0.4, recomputed 0.5"
    ]


def test_transcripts_tell_whether_the_skill_was_called(tmp_path: Path) -> None:
    folder = eval_magic_iteration(tmp_path)
    conversation = json.loads((folder / "eval-alpha/with_skill/conversation.json").read_text())
    conversation["events"].insert(
        1,
        {
            "type": "tool_invocation",
            "ordinal": 1,
            "round": 1,
            "name": "Skill",
            "args": {"skill": "demo-skill"},
            "result": "loaded",
        },
    )
    write_json(folder / "eval-alpha/with_skill/conversation.json", conversation)

    import_workspace([folder])

    assert Run.objects.get(condition__name="with_skill").skill_called is True
    assert Run.objects.get(condition__name="without_skill").skill_called is False
