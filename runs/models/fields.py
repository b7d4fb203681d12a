"""Model fields the project's models share."""

from __future__ import annotations

from typing import Any

import orjson
from django.db import models
from psycopg.types.json import Jsonb


class JSONField(models.JSONField):
    """Django's JSONField, written with orjson.

    An import writes ~1 GB of transcripts, gradings and benchmarks into JSON columns, and
    `json.dumps` was a tenth of its time (bench/README.md); on PostgreSQL see
    `get_placeholder`. orjson writes the same JSON
    (compact, UTF-8 rather than `\\u` escapes); what it refuses — keys that are not
    strings, integers beyond 64 bits, lone surrogates — goes through Django's own path, as
    does a field with an `encoder`. Reading is Django's, unchanged.
    """

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if not prepared:
            value = self.get_prep_value(value)
        if self.encoder is None and not hasattr(value, "as_sql"):
            try:
                raw = orjson.dumps(value)
            except (TypeError, orjson.JSONEncodeError):
                pass
            else:
                if connection.vendor == "postgresql":
                    return Jsonb(value, dumps=lambda _value: raw)
                return raw.decode()
        return super().get_db_prep_value(value, connection, prepared=True)

    def get_placeholder(self, value: Any, compiler: Any, connection: Any) -> str:
        # Having this method keeps Django 5.2's bulk_create on PostgreSQL from sending each
        # column as one array (UNNEST): psycopg escapes every quote of every JSON document
        # in an array with a regex in Python, 4 ms a run, most of a PostgreSQL import's time.
        # As VALUES rows, libpq escapes them.
        return "%s"
