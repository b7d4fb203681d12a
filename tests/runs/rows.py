"""What the importer's bad-input tests share: the rows that must stay as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from runs.importing import ImportFailure, import_workspace
from runs.models import AssertionResult, Condition, EvalCase, Grading, Iteration, Review, Run, Skill

MODELS = [Skill, EvalCase, Iteration, Condition, Run, Grading, AssertionResult, Review]


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in MODELS}


def failure(paths: list[Path]) -> str:
    """The one line an import of `paths` fails with (asserting it is one line)."""
    with pytest.raises(ImportFailure) as info:
        import_workspace(paths)
    message = str(info.value)
    assert "\n" not in message
    return message
