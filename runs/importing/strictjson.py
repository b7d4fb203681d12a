"""Strict JSON: what orjson parses, minus what no database column or reader should hold.

NaN and Infinity, numbers that overflow a double or integers outside signed 64 bits,
duplicate keys in an object and nesting deeper than MAX_DEPTH are refused with the file and
the JSON pointer; so are timestamps outside the years a database stores.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any, NoReturn

import orjson

from .errors import ImportFailure

#: How deep objects and arrays may nest. Real result files nest 7 levels at most; a deeper
#: value would later exhaust the recursion of validators, templates or PostgreSQL's jsonb.
MAX_DEPTH = 64
#: Integers must fit the database's BigIntegerField (and SQLite's INTEGER): signed 64-bit.
INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1
#: orjson reads an integer beyond 64 bits as a float, silently rounding it; any float this
#: large may have been such an integer, so the document is re-read exactly to tell.
_BIG_FLOAT = float(1 << 63)
#: Timestamps outside these years are typing mistakes or hostile; beyond them, converting
#: to UTC or storing in PostgreSQL overflows.
MIN_YEAR, MAX_YEAR = 1900, 9000

# A key's closing quote followed by whitespace before its colon. json.dumps and every agent
# harness write `"key": value`, so this is rare; when present, keys are not counted by bytes.
_SPACED_COLON = re.compile(rb'"[ \t\r\n]+:')
# Strings and punctuation: enough to follow the nesting of a document too deep to parse.
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]')


def json_pointer(parts: Any) -> str:
    """RFC 6901 pointer for a sequence of keys and indexes ("" is the whole document)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


class _Suspect(Exception):
    """The fast check found something that needs the exact (slow) read to name."""


class _Refused:
    """Stands in for a value the exact read refuses, so its pointer can be found."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class _DuplicateKeys(dict):
    """An object that had a key twice; `duplicate` is the first repeated key."""

    duplicate: str


def parse_json(raw: bytes, *, display: str) -> Any:
    """Parse bytes as JSON, or raise ImportFailure saying what is wrong and where.

    Refused as well as malformed JSON: NaN and Infinity, numbers that overflow a double or
    integers outside signed 64 bits, duplicate keys in an object and nesting deeper than
    MAX_DEPTH. orjson does the parse; the checks cost a walk over the parsed objects and a
    few byte counts (see _looks_sound): about 2.2 ms per MB on top of orjson's 0.9 on the
    import benchmark's files, ~2.5 s of CPU for its 1.1 GB. Only when those see a possible
    problem is the document read again, slowly and exactly, to name it.
    """
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]  # Windows editors write a BOM; it is not content.
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        _refuse_unparsed(raw, str(exc), display=display)
    if not _looks_sound(raw, data):
        # Valid UTF-8: orjson has just decoded it.
        _refuse_located(_exact_loads(raw.decode("utf-8"), display=display), display=display)
    if b"\\u0000" in raw:
        # PostgreSQL's text and jsonb cannot hold U+0000; agents' tool output sometimes
        # does. It becomes U+FFFD, the replacement character, on both databases alike.
        data = _without_nul(data)
    return data


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    return value


def _looks_sound(raw: bytes, data: Any) -> bool:
    """True when `data` certainly has no duplicate key, no deep nesting, no huge number.

    Duplicates: orjson keeps the last value of a repeated key, so the parsed objects hold
    fewer keys than the text. Outside strings a quote followed by a colon ends a key, and
    inside them a quote is escaped, so counting `":` (not preceded by an odd number of
    backslashes) bounds the keys in the text from above; equal counts mean no key was lost.
    """
    try:
        parsed_keys = _count_keys([data], 0)
    except _Suspect:
        return False
    if _SPACED_COLON.search(raw):
        return False
    # All `":` bound the keys from above; usually they equal them and one count decides.
    quote_colons = raw.count(b'":')
    if quote_colons == parsed_keys:
        return True
    # `\":` is an escaped quote in a string (JSON text quoted in a tool result, say) unless
    # its backslash is itself escaped; `\\":` occurrences are among the `\":` ones.
    escaped = raw.count(b'\\":')
    if not escaped:
        return False
    return quote_colons - escaped + raw.count(b'\\\\":') == parsed_keys


def _count_keys(value: dict[str, Any] | list[Any], depth: int) -> int:
    """Keys in the objects of `value`; raises _Suspect for deep nesting or a huge number."""
    if depth > MAX_DEPTH:
        raise _Suspect
    if type(value) is dict:
        keys = len(value)
        items: Any = value.values()
    else:
        keys = 0
        items = value
    for item in items:
        kind = type(item)
        if kind is str:
            continue  # most values: decide them with one comparison
        if kind is dict or kind is list:
            keys += _count_keys(item, depth + 1)
        elif kind is int:
            if item > INT_MAX or item < INT_MIN:
                raise _Suspect
        elif kind is float and (item >= _BIG_FLOAT or item <= -_BIG_FLOAT):
            raise _Suspect
    return keys


def _refuse_unparsed(raw: bytes, orjson_message: str, *, display: str) -> NoReturn:
    """Say why orjson refused `raw`, with the stdlib parser's clearer words where it has them."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFailure(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})", path=display
        ) from None
    data = _exact_loads(text, display=display)
    _refuse_located(data, display=display)
    # What the stdlib accepts and orjson does not, and is not named above (lone surrogates).
    raise ImportFailure(f"invalid JSON: {orjson_message}", path=display)


def _exact_loads(text: str, *, display: str) -> Any:
    """Parse with the stdlib, marking every value parse_json refuses so it can be located."""
    try:
        return json.loads(
            text,
            object_pairs_hook=_object,
            parse_int=_integer,
            parse_float=_float,
            parse_constant=_constant,
        )
    except json.JSONDecodeError as exc:
        if not text.strip():
            raise ImportFailure("empty file, expected JSON", path=display) from None
        raise ImportFailure(
            f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", path=display
        ) from None
    except RecursionError:
        raise _too_deep(_deep_path(text), display=display) from None


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    seen: set[str] = set()
    marked = _DuplicateKeys(result)
    for key, _ in pairs:
        if key in seen:
            marked.duplicate = key
            break
        seen.add(key)
    return marked


def _integer(text: str) -> int | _Refused:
    # Length first: int() of a 5,000-digit string raises (sys.set_int_max_str_digits).
    if len(text) <= 20 and INT_MIN <= (value := int(text)) <= INT_MAX:
        return value
    shown = text if len(text) <= 30 else f"{text[:20]}... ({len(text)} digits)"
    return _Refused(f"integer {shown} is out of range (JSON integers must fit in 64 bits)")


def _float(text: str) -> float | _Refused:
    value = float(text)
    if math.isfinite(value):
        return value
    shown = text if len(text) <= 30 else f"{text[:20]}... ({len(text)} characters)"
    return _Refused(f"number {shown} is out of range (too large for a double)")


def _constant(name: str) -> _Refused:
    return _Refused(f"{name} is not valid JSON (JSON has no NaN or Infinity; write null)")


def _refuse_located(value: Any, *, display: str, path: list[Any] | None = None) -> None:
    """Raise ImportFailure at the first refused value of an exact read, in document order."""
    path = [] if path is None else path
    kind = type(value)
    if kind is _Refused:
        raise ImportFailure(value.reason, path=display, pointer=json_pointer(path))
    if kind is not list and not isinstance(value, dict):
        return
    if len(path) >= MAX_DEPTH:
        raise _too_deep(path, display=display)
    if kind is _DuplicateKeys:
        raise ImportFailure(
            f"key {value.duplicate!r} appears twice in this object",
            path=display,
            pointer=json_pointer(path),
        )
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        path.append(key)
        _refuse_located(item, display=display, path=path)
        path.pop()


def _too_deep(path: list[Any] | None, *, display: str) -> ImportFailure:
    return ImportFailure(
        f"nested deeper than {MAX_DEPTH} levels",
        path=display,
        pointer=json_pointer(path) if path else None,
    )


def _deep_path(text: str) -> list[Any] | None:
    """Where nesting first passes MAX_DEPTH, for a document too deep for json.loads.

    Follows only strings and punctuation, and stops at that point, so a hostile document of
    a million brackets costs no more than its first few hundred bytes.
    """
    # One frame per open container: [is an object, key or index, expecting a key].
    stack: list[list[Any]] = []
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        first = token[0]
        if first == '"':
            if stack and stack[-1][2]:
                try:
                    stack[-1][1] = json.loads(token)
                except json.JSONDecodeError:
                    stack[-1][1] = token[1:-1]
                stack[-1][2] = False
        elif first in "[{":
            if len(stack) >= MAX_DEPTH:
                return [frame[1] for frame in stack]
            stack.append([first == "{", None if first == "{" else 0, first == "{"])
        elif first in "]}":
            if stack:
                stack.pop()
        elif stack:  # a comma
            if stack[-1][0]:
                stack[-1][2] = True
            else:
                stack[-1][1] += 1
    return None


def parse_timestamp(value: Any, *, display: str, pointer: str) -> datetime | None:
    """An ISO-8601 timestamp (naive means UTC, 'Z' allowed) as an aware datetime, or None.

    Lenient where files are: None for a missing, empty or unparseable value (skill-creator
    files are written by hand). Strict where the database is: a timestamp that parses but
    lies outside MIN_YEAR..MAX_YEAR, or overflows when converted to UTC, raises
    ImportFailure instead of failing later inside the save.
    """
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        in_utc = parsed.astimezone(UTC)
    except OverflowError:
        in_utc = None
    if in_utc is None or not all(MIN_YEAR <= d.year <= MAX_YEAR for d in (parsed, in_utc)):
        raise ImportFailure(
            f"timestamp {value.strip()!r} is out of range (years {MIN_YEAR} to {MAX_YEAR})",
            path=display,
            pointer=pointer,
        )
    return parsed
