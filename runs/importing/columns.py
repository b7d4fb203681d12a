"""The layout readers' records and the models share field names: one copier each way.

A record field whose name is one of a model's own columns (not a relation, not the key)
is that column; the writer passes the rest (relations, figures computed on the way).
"""

from __future__ import annotations

import functools
from dataclasses import fields
from typing import Any, TypeVar

from django.db import models

R = TypeVar("R")


@functools.cache
def shared_fields(record_type: type, model: type[models.Model]) -> tuple[str, ...]:
    """The names of `model`'s own columns that `record_type` has a field for."""
    own = {f.name for f in fields(record_type)}
    return tuple(
        f.name
        for f in model._meta.concrete_fields
        if not f.is_relation and not f.primary_key and f.name in own
    )


def columns(record: Any, model: type[models.Model], **computed: Any) -> dict[str, Any]:
    """The model's column values from `record`, with `computed` added (and winning)."""
    return {name: getattr(record, name) for name in shared_fields(type(record), model)} | computed


def record_from_row(record_type: type[R], row: models.Model, **given: Any) -> R:
    """A record holding the row's values for the fields it shares with the row's model."""
    shared = shared_fields(record_type, type(row))
    return record_type(**{name: getattr(row, name) for name in shared}, **given)
