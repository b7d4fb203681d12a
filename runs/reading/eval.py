"""The eval pages' own data: two runs of an eval side by side, for its diff page.

Any two runs (two conditions, or one condition in two iterations): their final messages and
their diff.patch compared line by line. The eval page itself reads `Run.objects.for_eval_page`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

#: Texts longer than this are compared by their head (difflib is quadratic on changed runs).
MAX_DIFF_LINES = 4_000


@dataclass(frozen=True)
class Line:
    """One row of a side-by-side diff: "equal", "replace", "delete" or "insert"."""

    tag: str
    left: str | None
    right: str | None
    left_number: int | None
    right_number: int | None


def side_by_side(before: str, after: str) -> list[Line]:
    """Two texts line by line: unchanged lines once on each side, changes paired."""
    a = before.splitlines()[:MAX_DIFF_LINES]
    b = after.splitlines()[:MAX_DIFF_LINES]
    rows: list[Line] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            rows.append(
                Line(
                    tag=tag,
                    left=a[i] if i < i2 else None,
                    right=b[j] if j < j2 else None,
                    left_number=i + 1 if i < i2 else None,
                    right_number=j + 1 if j < j2 else None,
                )
            )
    return rows
