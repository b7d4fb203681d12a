"""Validity warnings are stored as a code with parameters; the sentence is rendered from them."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from django.apps import apps as django_apps
from django.urls import reverse

from runs.importing import import_workspace
from runs.models import Iteration
from runs.warnings import SENTENCES, ValidityWarning, merged, named, without
from tests.factories import eval_magic_iteration

migration = importlib.import_module("runs.migrations.0011_structured_validity_warnings")


def test_a_warning_renders_its_sentence_from_its_parameters() -> None:
    errored = ValidityWarning(
        "errored-runs", {"n": 7, **named([f"e{i}/with_skill" for i in range(7)])}
    )
    assert errored.message == (
        "7 run(s) errored and are left out of pass rates: "
        "e0/with_skill, e1/with_skill, e2/with_skill, e3/with_skill, e4/with_skill and 2 more"
    )
    assert ValidityWarning("overridden", {"n": 1}).message == (
        "1 assertion result overridden by reviewers: statistics use the overrides"
    )
    assert ValidityWarning("regraded", {"n": 2, "judges": []}).message == (
        "2 run(s) graded or regraded by evalsite after import (no judge asked); "
        "a benchmark.json the source recorded describes the earlier gradings"
    )
    assert ValidityWarning("overridden", {"n": 3}).as_json() == {
        "code": "overridden",
        "params": {"n": 3},
        "message": "3 assertion results overridden by reviewers: statistics use the overrides",
    }


def test_a_sentence_given_twice_is_kept_once_with_evalsites_code() -> None:
    ours = ValidityWarning("zero-assertions", {"evals": ["alpha"]})
    stored = merged([ValidityWarning.recorded(ours.message), ValidityWarning.recorded("x")], [ours])
    assert [w["code"] for w in stored] == ["zero-assertions", "recorded"]
    assert without(stored, "zero-assertions") == [stored[1]]


@pytest.mark.django_db
def test_the_importer_stores_codes_and_the_iteration_page_shows_the_sentences(
    tmp_path: Path, client: object, admin_user: object
) -> None:
    folder = eval_magic_iteration(
        tmp_path,
        cells={
            ("alpha", "with_skill"): [{"a": True}, {"a": True}],
            ("alpha", "without_skill"): [{"a": False}],
        },
    )
    import_workspace([folder])

    iteration = Iteration.objects.get()
    (uneven,) = [w for w in iteration.validity_warnings if w["code"] == "uneven-run-counts"]
    assert uneven["params"] == {"eval_id": "alpha", "counts": {"with_skill": 2, "without_skill": 1}}
    assert uneven["message"] == "uneven run counts on alpha: with_skill 2, without_skill 1"
    client.force_login(admin_user)  # type: ignore[attr-defined]
    page = client.get(iteration.get_absolute_url())  # type: ignore[attr-defined]
    assert "<li>uneven run counts on alpha: with_skill 2, without_skill 1</li>" in page.text
    api = client.get(  # type: ignore[attr-defined]
        reverse("api:iteration_detail", args=[iteration.skill.name, iteration.number])
    ).json()
    assert "uneven run counts on alpha: with_skill 2, without_skill 1" in api["validity_warnings"]
    assert uneven in api["validity_warning_details"]


@pytest.mark.parametrize(
    "warning",
    [
        ValidityWarning("no-grading", {"n": 6, **named(["a/b", "c/d", "e", "f", "g", "h"])}),
        ValidityWarning("no-grading", {"n": 1, **named(["a/with_skill/run-2"])}),
        ValidityWarning("overridden", {"n": 1}),
        ValidityWarning("regraded", {"n": 3, "judges": ["claude-a", "claude-b"]}),
        ValidityWarning(
            "undeclared-condition",
            {
                "condition": "with_skil",
                "eval_folders": 2,
                "first": "ws/eval-a/with_skil",
                "declared": ["with_skill", "without_skill"],
            },
        ),
        ValidityWarning(
            "diluted-invocation",
            {"condition": "with_skill", "invoked": 2, "runs": 3, "percent": 67.0},
        ),
        ValidityWarning(
            "skill-creator-delta",
            {"recorded": -0.5, "treatment": "with_skill", "control": "old_skill", "ours": 0.5},
        ),
        ValidityWarning(
            "benchmark-disagrees", {"problems": [f"p{i}" for i in range(5)], "unnamed": 2}
        ),
        ValidityWarning("unsafe-no-sandbox"),
    ],
    ids=lambda w: w.code,
)
def test_the_migration_gives_a_stored_sentence_back_its_code(warning: ValidityWarning) -> None:
    assert migration.structured(warning.message, recorded=set()) == warning.as_json()


def test_the_migration_keeps_what_it_does_not_know_as_text() -> None:
    assert (
        migration.structured("found something", recorded={"found something"})["code"] == "recorded"
    )
    legacy = migration.structured(
        "eval-a: the conditions were graded on different assertions (…)", set()
    )
    assert legacy["code"] == "legacy" and legacy["message"].startswith("eval-a: the conditions")
    reworded = migration.structured(
        "ws/eval-a/with_skill holds run-<k> folders and a flat run.json; "
        "the run folders were imported, the flat files ignored",
        set(),
    )
    assert reworded["params"] == {"folder": "ws/eval-a/with_skill", "file": "run.json"}


def test_every_code_has_a_sentence() -> None:
    codes = {code for code, _, _ in migration.PATTERNS} | {"recorded", "legacy"}
    assert codes <= set(SENTENCES)


@pytest.mark.django_db
def test_the_migration_rewrites_stored_sentences_and_back(tmp_path: Path) -> None:
    import_workspace(
        [eval_magic_iteration(tmp_path, cells={("alpha", "with_skill"): [{"a": True}]})]
    )
    stored = Iteration.objects.get().validity_warnings
    sentences = [w["message"] for w in stored]
    Iteration.objects.update(validity_warnings=sentences)

    migration.to_structured(django_apps, None)
    assert Iteration.objects.get().validity_warnings == stored
    migration.to_sentences(django_apps, None)
    assert Iteration.objects.get().validity_warnings == sentences
