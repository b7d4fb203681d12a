"""The layout readers' records and the models share field names: one copier each way.

A record field whose name is one of a model's own columns (not a relation, not the key)
is that column; the writer passes the rest (relations, figures computed on the way).
"""

from __future__ import annotations

import functools
from dataclasses import fields
from typing import Any, TypeVar

import orjson
from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from psycopg.types.json import Jsonb

from runs.models.fields import JSONField

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


#: Rows per executemany (as bulk_create's batch_size in the writer).
_BATCH = 500
#: The Python type each kind of column takes as it is; anything else goes through the field.
_PLAIN = {
    "CharField": str,
    "TextField": str,
    "BooleanField": bool,
    "FloatField": float,
    "IntegerField": int,
    "BigIntegerField": int,
    "PositiveIntegerField": int,
    "PositiveSmallIntegerField": int,
    "SmallIntegerField": int,
    "ForeignKey": int,
    "OneToOneField": int,
}


def insert_rows(model: type[models.Model], rows: list[dict[str, Any]]) -> list[int]:
    """Insert `rows` (column values by attname; a missing one takes the field's default)
    with one executemany, and return the ids given to them, in order.

    What bulk_create does for an import's thousands of runs and gradings, without building a
    model instance and preparing each value through its field (a third of a large import's
    time): a value already of its column's type (or None) is sent as it is, anything else
    (a JSON document, a datetime, an int where a float belongs) through the field's
    `get_db_prep_save`, exactly as bulk_create would. The ids are taken first (below),
    since neither driver returns them from executemany. Must run inside a transaction.
    """
    if not rows:
        return []
    ids = _allocate_ids(model, len(rows))
    # The connection itself, not django.db.connection: the proxy's per-thread lookup on
    # every attribute is ~20 us, and fields ask for the vendor once per value.
    db = connections[DEFAULT_DB_ALIAS]
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    how = [
        (f, _PLAIN.get(f.get_internal_type()), isinstance(f, JSONField) and f.encoder is None)
        for f in fields
    ]
    defaults = [f.get_default() for f in fields]
    quote = connection.ops.quote_name
    names = ", ".join(quote(f.column) for f in [model._meta.pk, *fields])
    marks = ", ".join(["%s"] * (len(fields) + 1))
    sql = f"INSERT INTO {quote(model._meta.db_table)} ({names}) VALUES ({marks})"
    with connection.cursor() as cursor:
        # In batches, prepared as they go: the JSON text of 6,000 runs at once is ~100 MB.
        for start in range(0, len(rows), _BATCH):
            batch = zip(ids[start : start + _BATCH], rows[start : start + _BATCH], strict=True)
            cursor.executemany(sql, [_prepared(pk, row, how, defaults, db) for pk, row in batch])
    return ids


def _prepared(
    pk: int, row: dict[str, Any], how: list[tuple[Any, type | None, bool]], defaults: list, db: Any
) -> list[Any]:
    """One row's values as the driver takes them, the primary key first."""
    prepared: list[Any] = [pk]
    for (field, kind, is_json), default in zip(how, defaults, strict=True):
        value = row.get(field.attname, default)
        if value is None:
            pass  # NULL, as every field here prepares None
        elif is_json:
            value = _json_value(field, value, db)
        elif type(value) is not kind:
            value = field.get_db_prep_save(value, db)
        prepared.append(value)
    return prepared


def _json_value(field: JSONField, value: Any, db: Any) -> Any:
    """What runs.models.fields.JSONField sends for `value`, without Django's layers."""
    try:
        raw = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return field.get_db_prep_save(value, db)  # what orjson refuses: Django's own path
    return Jsonb(value, dumps=lambda _value: raw) if db.vendor == "postgresql" else raw.decode()


def _allocate_ids(model: type[models.Model], count: int) -> list[int]:
    """`count` new primary keys for `model`'s table, no other writer can be given.

    PostgreSQL: taken from the column's sequence, as an INSERT would. SQLite: after the
    highest id the table has ever had (its AUTOINCREMENT counter, which the explicit ids
    then move on); the import's transaction has already written, so it holds SQLite's one
    write lock and no other connection can insert in between.
    """
    table = model._meta.db_table
    column = model._meta.pk.column
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                [table, column, count],
            )
            return [row[0] for row in cursor.fetchall()]
        # Otherwise SQLite: the settings accept no other database.
        cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
        counter = cursor.fetchone()
        cursor.execute(f"SELECT max({connection.ops.quote_name(column)}) FROM {table}")
        highest = max(counter[0] if counter else 0, cursor.fetchone()[0] or 0)
    return list(range(highest + 1, highest + 1 + count))
