"""SKILL.md front matter: the skill's name and description, read as leniently as agents do.

Skill authors write `description:` as prose, and prose has colons: `description: Use when:
the user asks` is not valid YAML, yet agent harnesses load the skill. So a front matter
whose YAML does not parse is read line by line for its `name:` and `description:`, with a
warning, rather than refusing the import. What stays refused is what no SKILL.md needs and
an attacker would: YAML aliases (a "billion laughs" expands a few lines into gigabytes as
soon as anything reads the value), nesting past MAX_DEPTH, and front matter over MAX_BYTES.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from .errors import ImportFailure

#: Real front matter is a few hundred bytes (the Agent Skills spec caps a description at
#: 1,024 characters); the cap keeps the pure-Python YAML parser's time bounded.
MAX_BYTES = 64 * 1024
MAX_DEPTH = 64

_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(\n|\Z)", re.DOTALL)
_TOP_LEVEL_KEY = re.compile(r"^([A-Za-z0-9_-]+)[ \t]*:(?:[ \t]+|$)(.*)$")
_BLOCK_SCALAR = re.compile(r"^[|>][+-]?[0-9]?[+-]?$")
_QUOTES = ("'", '"')


@dataclass(frozen=True)
class FrontMatter:
    """What SKILL.md says about its skill; `warning` is set when it was read leniently."""

    name: str | None
    description: str
    warning: str | None = None


def parse_front_matter(text: str, *, display: str) -> FrontMatter:
    """Name and description from SKILL.md's front matter; no front matter gives (None, "").

    Raises ImportFailure (one line, naming `display`) only for front matter over MAX_BYTES,
    YAML aliases or nesting deeper than MAX_DEPTH: never for ordinary YAML mistakes.
    """
    match = _FRONT_MATTER.match(text)
    if not match:
        return FrontMatter(name=None, description="")
    source = match.group(1)
    size = len(source.encode("utf-8"))
    if size > MAX_BYTES:
        raise ImportFailure(
            f"front matter is {size} bytes, over the {MAX_BYTES // 1024} KiB limit", path=display
        )
    try:
        meta = yaml.load(source, Loader=_BoundedLoader)  # a SafeLoader: plain data only
    except _Refused as refused:
        raise ImportFailure(str(refused), path=display) from None
    except (yaml.YAMLError, ValueError, OverflowError) as exc:
        # ValueError/OverflowError: PyYAML's own constructors, e.g. `date: 2024-13-45`.
        problem = f"front matter is not valid YAML ({_problem(exc)})"
        return _read_line_by_line(source, display=display, problem=problem)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        problem = "front matter is not a YAML mapping"
        return _read_line_by_line(source, display=display, problem=problem)
    name = meta.get("name")
    return FrontMatter(
        name=str(name) if name else None,
        description=str(meta.get("description") or "").strip(),
    )


class _Refused(Exception):
    """YAML that is refused outright rather than read leniently."""


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader refusing aliases and deep nesting while it composes, before any value is
    built: PyYAML shares an alias's node, so the expansion happens later, in whoever reads
    the value (str() of a billion laughs), where it can no longer be stopped."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            if event.anchor in self.anchors:
                # An alias of an undefined anchor is a plain YAML error (`*emphasis*` in a
                # description), left to the lenient reading below.
                raise _Refused(
                    f"front matter uses a YAML alias (*{event.anchor}, line "
                    f"{event.start_mark.line + 2}); SKILL.md front matter has no use for "
                    "aliases, and they can expand a few lines into gigabytes"
                )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(f"front matter nests deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _problem(exc: Exception) -> str:
    """The YAML error in a few words, with its line in SKILL.md (the front matter starts on
    line 2)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        where = ""
        if exc.problem_mark is not None:
            mark = exc.problem_mark
            where = f", line {mark.line + 2} column {mark.column + 1}"
        return f"{exc.problem}{where}"
    return " ".join(str(exc).split()) or type(exc).__name__


def _read_line_by_line(source: str, *, display: str, problem: str) -> FrontMatter:
    """`name:` and `description:` read as text: the value after the key on its line, and for
    the description any indented lines that continue it."""
    values: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in source.splitlines():
        if key := _TOP_LEVEL_KEY.match(line):
            # A repeated key is ignored: the first is the one an author reading from the top
            # sees.
            current = None if key.group(1) in values else values.setdefault(key.group(1), [])
            if current is not None:
                current.append(key.group(2).strip())
        elif current is not None and (line[:1] in (" ", "\t") or not line.strip()):
            current.append(line.strip())
        else:
            current = None
    name_lines = values.get("name", [])
    name = _plain(name_lines[0]) if name_lines else None
    return FrontMatter(
        name=name or None,
        description=_joined(values.get("description", [])),
        warning=f"{display}: {problem}; name and description read line by line instead",
    )


def _plain(value: str) -> str | None:
    """A one-line value as written, unquoted; None if it is YAML structure, not text."""
    if len(value) >= 2 and value[0] in _QUOTES and value[-1] == value[0]:
        return value[1:-1].strip()
    if not value or value[0] in "[{&*!|>%@`#":
        return None
    return value


def _joined(lines: list[str]) -> str:
    """A description from its lines: a block scalar (`|`, `>`) keeps its text, and plain or
    quoted text is unquoted; continuation lines join with spaces as YAML folds them."""
    if not lines:
        return ""
    first, rest = lines[0], lines[1:]
    if _BLOCK_SCALAR.match(first):
        separator = "\n" if first.startswith("|") else " "
        return separator.join(line for line in rest if line).strip()
    text = " ".join(line for line in [first, *rest] if line).strip()
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] == text[0]:
        text = text[1:-1].strip()
    return text
