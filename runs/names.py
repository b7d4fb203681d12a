"""What a skill name, eval id or condition name may be: checked once, where it comes in.

A name is part of every address that shows it (`/skills/<name>/…`, share links, the API), so
it must survive a round trip through a URL. Anything Claude Code would load is allowed
(spaces, accents, CJK, emoji, `%`, `?`, `#`, `plugin:skill`); `reverse()` encodes it. Refused,
each with a one-line reason: `/` (no address can hold one), a backslash (browsers read it as `/`),
control characters, line and paragraph separators, unpaired surrogates and bidirectional
overrides (a name that displays as another), empty names, `.` and `..`, and names longer than
the field. A name is kept as written, only stripped of surrounding whitespace, and never
Unicode-normalised: identity is the exact string.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from django.core.exceptions import ValidationError
from django.urls import NoReverseMatch
from django.utils.deconstruct import deconstructible

#: The model fields' max_length (Skill.name, EvalCase.eval_id and Run.eval_id, Condition.name);
#: tests/runs/test_names.py checks they agree.
SKILL_NAME_MAX = 200
EVAL_ID_MAX = 200
CONDITION_NAME_MAX = 100

#: LRE, RLE, PDF, LRO, RLO and LRI, RLI, FSI, PDI ("Trojan Source", CVE-2021-42574).
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

#: Unicode categories refused anywhere in a name: controls, unpaired surrogates, and the
#: line/paragraph separators that break a name over two lines.
REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cs": "an unpaired surrogate",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}


class InvalidName(ValueError):
    """A name that cannot be one; `str()` is one line: `skill name 'a/b' contains '/'`."""

    def __init__(self, kind: str, value: object, reason: str) -> None:
        self.kind = kind
        self.value = value
        #: The short reason alone: "contains '/'", "is empty", …
        self.reason = reason
        super().__init__(f"{kind} {shown(value)} {reason}")


def shown(value: object, limit: int = 60) -> str:
    """`value` quoted for a one-line message: escapes visible, a long one cut short."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 2]}…{text[-1]}"


def _validated(kind: str, value: object, max_length: int) -> str:
    if not isinstance(value, str):
        raise InvalidName(kind, value, f"is not text but {type(value).__name__}")
    for char in value:
        category = unicodedata.category(char)
        if category in REFUSED_CATEGORIES:
            what = REFUSED_CATEGORIES[category]
            raise InvalidName(kind, value, f"contains {what} (U+{ord(char):04X})")
        if char in BIDI_CONTROLS:
            raise InvalidName(kind, value, f"contains a bidirectional override (U+{ord(char):04X})")
    name = value.strip()
    if not name:
        raise InvalidName(kind, value, "is empty" if not value else "is only whitespace")
    if "/" in name:
        raise InvalidName(kind, value, "contains '/'")
    if "\\" in name:
        raise InvalidName(kind, value, "contains a backslash")
    if name in {".", ".."}:
        raise InvalidName(kind, value, "is '.' or '..'")
    if len(name) > max_length:
        raise InvalidName(kind, value, f"is longer than {max_length} characters")
    return name


def natural_key(text: str) -> list[object]:
    """Sort key that reads digits as numbers: eval 2 before eval 10, iteration-2 before 10.

    re.split with a capturing group puts text at even positions and digits at odd ones, so two
    keys compare text with text and numbers with numbers.
    """
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def validate_skill_name(name: str) -> str:
    """The skill name, stripped of surrounding whitespace; InvalidName if it cannot be one."""
    return _validated("skill name", name, SKILL_NAME_MAX)


def validate_eval_id(value: str) -> str:
    """The eval id, stripped of surrounding whitespace; InvalidName if it cannot be one.

    Text only: an integer id from evals.json is the caller's to turn into text first.
    """
    return _validated("eval id", value, EVAL_ID_MAX)


def validate_condition_name(name: str) -> str:
    """The condition name, stripped of surrounding whitespace; InvalidName if it cannot be one."""
    return _validated("condition name", name, CONDITION_NAME_MAX)


VALIDATORS: dict[str, Callable[[str], str]] = {
    "skill": validate_skill_name,
    "eval": validate_eval_id,
    "condition": validate_condition_name,
}


@deconstructible
class NameValidator:
    """A model field validator (admin, `full_clean()`) around one of the functions above.

    Also refuses surrounding whitespace, which the function would strip: a stored name is
    one the importer could have written.
    """

    def __init__(self, kind: str) -> None:
        if kind not in VALIDATORS:
            raise ValueError(f"kind must be one of {sorted(VALIDATORS)}, not {kind!r}")
        self.kind = kind

    def __call__(self, value: str) -> None:
        try:
            cleaned = VALIDATORS[self.kind](value)
        except InvalidName as exc:
            raise ValidationError(f"This {exc.kind} {exc.reason}.", code="invalid_name") from None
        if cleaned != value:
            raise ValidationError("This name begins or ends with whitespace.", code="invalid_name")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NameValidator) and other.kind == self.kind

    def __hash__(self) -> int:
        return hash(self.kind)


def findable(value: str) -> bool:
    """Whether a name from a URL can be looked up at all.

    Lookups stay exact, so a row stored before validation existed (a trailing space, say)
    is still found by its address; only NUL is turned away before the query, because
    PostgreSQL raises on it (a 500, where "not found" is the answer).
    """
    return "\x00" not in value


def address(build: Callable[[], str]) -> str | None:
    """`build()` (a `get_absolute_url`, a `reverse`), or None when a name stored before
    validation existed cannot be part of an address: a list shows that row without a link
    rather than answering 500 for everyone."""
    try:
        return build()
    except NoReverseMatch:
        return None
