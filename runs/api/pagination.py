"""Bounded limit/offset pagination, and pages whose rows are summarised after slicing."""

# No `from __future__ import annotations`: ninja reads Input's annotations at runtime.

from collections.abc import Callable
from typing import Any

from ninja import Schema
from ninja.pagination import LimitOffsetPagination
from pydantic import Field


class Pagination(LimitOffsetPagination):
    """limit/offset with bounds: ninja's own offset is unbounded, and a 20-digit offset
    overflows the database's integers (a 500 that schemathesis found)."""

    class Input(Schema):
        limit: int = Field(100, ge=1, le=500)
        offset: int = Field(0, ge=0, le=2**31 - 1)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_limit=500, **kwargs)


class LazyPage:
    """A queryset whose rows are converted only once pagination has sliced out its page."""

    def __init__(self, queryset: Any, convert: Callable[[list[Any]], list[Any]]) -> None:
        self.queryset = queryset
        self.convert = convert

    def __len__(self) -> int:
        return self.queryset.count()

    def __getitem__(self, index: slice) -> list[Any]:
        return self.convert(list(self.queryset[index]))
