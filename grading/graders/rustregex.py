"""Rust `regex` crate patterns, translated to Python `re` with Rust's meaning kept.

Eval authors write patterns for eval-magic, whose runner uses Rust's `regex` crate. Most of
the syntax is shared; where Python would silently mean something else, the translation
either rewrites the construct or refuses it with a message an eval author can act on:

- `$` outside `(?m)` matches only at the very end in Rust; Python's also matches before a
  final newline, so it becomes `\\Z`. `\\z` becomes `\\Z`.
- Inline flags may appear anywhere in Rust (`a(?i)b`) and last to the end of the group,
  across `|`; Python 3.11 only takes them at the start, so they become scoped groups,
  reopened after each `|`. `x` (verbose) is applied here — whitespace and `#` comments are
  dropped, inside classes too, as Rust does — and never reaches Python.
- `(?<name>…)` becomes `(?P<name>…)`; `\\x{…}`, `\\u{…}`, `\\U{…}` become the character;
  `[[:alpha:]]` and nested classes `[a[bc]]` are flattened; `\\<`, `\\>`, `\\b{start}` …
  become equivalent Python assertions.
- Lookaround and backreferences (not Rust syntax), Unicode property classes `\\p{…}`
  (not in `re`), class set operations `&&`/`--`/`~~`, and the `U`/`R`/`-u` flags are
  refused.

Rust's engine runs in linear time; Python's backtracks, so `(a+)+$` on a long line of
`a`s never ends. Where the text is an agent's (Grep, a command's stdout),
`compile_rust_bounded` compiles the same translation with the `regex` module, whose
searches take a `timeout=`.
"""

from __future__ import annotations

import re
from functools import lru_cache

import regex

_FLAG_CHARS = set("imsxuUR")
_PY_FLAGS = "ims"  # the flags that reach Python; x is applied here, u is Rust's default
_SIMPLE_ESCAPES = set("afnrtvdDwWsS")
_ASCII_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7F",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1F\\x7F",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_WORD_BOUNDARIES = {
    "start": r"\b(?=\w)",
    "end": r"\b(?<=\w)",
    "start-half": r"(?<!\w)",
    "end-half": r"(?!\w)",
}


class RustRegexError(ValueError):
    """A pattern that is not valid Rust regex syntax, or that Python cannot express."""


def translate(pattern: str) -> str:
    """The Python `re` source that matches what `pattern` matches in Rust's regex crate."""
    return _Translator(pattern).translate()


@lru_cache(maxsize=512)
def compile_rust_regex(pattern: str) -> re.Pattern[str]:
    """`pattern` (Rust syntax) compiled for Python; RustRegexError says what is wrong."""
    source = translate(pattern)
    try:
        return re.compile(source)
    except re.error as exc:
        raise RustRegexError(str(exc)) from None


@lru_cache(maxsize=512)
def compile_rust_bounded(pattern: str, *, ignore_case: bool = False) -> regex.Pattern[str]:
    """`pattern` (Rust syntax) compiled with `regex` (VERSION0: `re`'s syntax and meaning),
    so that `.search(text, timeout=seconds)` raises TimeoutError instead of hanging."""
    source = translate(pattern)
    flags = regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0)
    try:
        return regex.compile(source, flags)
    except regex.error as exc:
        raise RustRegexError(str(exc)) from None


def rust_search(pattern: str, text: str) -> bool:
    """Whether the Rust-syntax `pattern` matches anywhere in `text` (unanchored)."""
    return compile_rust_regex(pattern).search(text) is not None


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.last_plain = ""  # the previous atom when it was an unescaped character

    def translate(self) -> str:
        out = self._sequence(frozenset(), depth=0)
        if self.i < len(self.p):  # only an unbalanced ')' stops the top-level sequence
            raise RustRegexError(f"unopened group: ')' at offset {self.i}")
        return out

    # -- helpers ---------------------------------------------------------------------------

    def _peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.p[j] if j < len(self.p) else ""

    def _startswith(self, text: str) -> bool:
        return self.p.startswith(text, self.i)

    def _skip_verbose(self, flags: frozenset[str]) -> bool:
        """In `x` mode, step over whitespace or a `#` comment; whether anything was skipped."""
        if "x" not in flags:
            return False
        c = self._peek()
        if c.isspace():
            self.i += 1
            return True
        if c == "#":
            end = self.p.find("\n", self.i)
            self.i = len(self.p) if end < 0 else end + 1
            return True
        return False

    # -- sequences and groups -------------------------------------------------------------

    def _sequence(self, flags: frozenset[str], *, depth: int) -> str:
        """A group body up to (not including) its `)`, flags scoped the Rust way."""
        base = flags
        branches: list[str] = []
        out: list[str] = []
        wrappers = 0  # scoped flag groups opened in the current branch
        while self.i < len(self.p):
            if self._skip_verbose(flags):
                continue
            c = self.p[self.i]
            if c == ")":
                break
            if c == "|":
                self.i += 1
                out.append(")" * wrappers)
                branches.append("".join(out))
                out, wrappers = [], 0
                if flags != base:  # Rust keeps a mid-group flag change across `|`
                    out.append(_flag_group(base, flags))
                    wrappers = 1
                continue
            if c == "(":
                self.last_plain = ""
                piece, new_flags = self._group(flags, depth)
                # A quantifier after `)` quantifies the group, whatever its last atom was:
                # `(a+)+` is Rust syntax, not a possessive `++`.
                self.last_plain = ""
                if new_flags is not None:  # a bare `(?flags)`: the rest of the group
                    out.append(_flag_group(flags, new_flags))
                    wrappers += 1
                    flags = new_flags
                else:
                    out.append(piece)
                continue
            out.append(self._atom(flags))
        out.append(")" * wrappers)
        branches.append("".join(out))
        return "|".join(branches)

    def _group(self, flags: frozenset[str], depth: int) -> tuple[str, frozenset[str] | None]:
        """A parenthesised construct: (python source, None) or ("", flags) for `(?flags)`."""
        start = self.i
        self.i += 1  # (
        if not self._startswith("?"):
            return "(" + self._body(flags, depth) + ")", None
        self.i += 1  # ?
        if self._startswith("P<") or (self._startswith("<") and self._peek(1) not in ("=", "!")):
            self.i += 2 if self._peek() == "P" else 1
            end = self.p.find(">", self.i)
            if end < 0:
                raise RustRegexError(f"unterminated group name at offset {start}")
            name = self.p[self.i : end]
            if not name.isidentifier():
                raise RustRegexError(f"group name {name!r} is not supported")
            self.i = end + 1
            return f"(?P<{name}>" + self._body(flags, depth) + ")", None
        if self._startswith(":"):
            self.i += 1
            return "(?:" + self._body(flags, depth) + ")", None
        if self._startswith("=") or self._startswith("!") or self._startswith("<"):
            raise RustRegexError(
                "lookaround ((?=, (?!, (?<=, (?<!) is not supported by Rust regex syntax"
            )
        if self._startswith("P="):
            raise RustRegexError("backreferences are not supported by Rust regex syntax")
        new_flags = self._flags(flags, start)
        if self._startswith(")"):
            self.i += 1
            return "", new_flags
        self.i += 1  # ':' — _flags stops only at ')' or ':'
        return _flag_group(flags, new_flags) + self._body(new_flags, depth) + ")", None

    def _body(self, flags: frozenset[str], depth: int) -> str:
        inner = self._sequence(flags, depth=depth + 1)
        if not self._startswith(")"):
            raise RustRegexError("unclosed group: missing ')'")
        self.i += 1
        return inner

    def _flags(self, flags: frozenset[str], start: int) -> frozenset[str]:
        result = set(flags)
        negate = False
        while self.i < len(self.p) and self.p[self.i] not in ":)":
            c = self.p[self.i]
            self.i += 1
            if c == "-" and not negate:
                negate = True
                continue
            if c not in _FLAG_CHARS:
                raise RustRegexError(f"unsupported group syntax at offset {start}: '(?{c}'")
            if c == "U" and not negate:
                raise RustRegexError("the U (swap greed) flag is not supported")
            if c == "R" and not negate:
                raise RustRegexError("the R (CRLF) flag is not supported")
            if c == "u" and negate:
                raise RustRegexError("(?-u) (non-Unicode mode) is not supported")
            if c in "uUR":
                continue
            if negate:
                result.discard(c)
            else:
                result.add(c)
        if self.i >= len(self.p):
            raise RustRegexError(f"unclosed flag group at offset {start}")
        return frozenset(result)

    # -- atoms ----------------------------------------------------------------------------

    def _atom(self, flags: frozenset[str]) -> str:
        c = self.p[self.i]
        previous, self.last_plain = self.last_plain, ""
        if c == "\\":
            return self._escape(in_class=False)
        if c == "[":
            return "[" + self._class_body(flags) + "]"
        self.i += 1
        if c == "$":
            return "$" if "m" in flags else r"\Z"
        if c == "+" and previous in ("*", "+", "?", "}"):
            # Python 3.11 reads `a*+` as a possessive quantifier; Rust has none.
            raise RustRegexError("possessive quantifiers (*+, ++, ?+) are not supported")
        self.last_plain = c
        return c

    def _escape(self, *, in_class: bool) -> str:
        self.i += 1  # backslash
        if self.i >= len(self.p):
            raise RustRegexError("pattern ends with a lone backslash")
        c = self.p[self.i]
        self.i += 1
        if c.isdigit() or c == "k":
            raise RustRegexError("backreferences are not supported by Rust regex syntax")
        if c in "pP":
            raise RustRegexError(
                f"Unicode property classes (\\{c}…) are not supported by Python's re"
            )
        if c in _SIMPLE_ESCAPES:
            return "\\" + c
        if c in "xuU":
            return f"\\U{self._codepoint(c):08x}"
        if not in_class:
            if c == "A":
                return r"\A"
            if c == "z":
                return r"\Z"
            if c == "B":
                return r"\B"
            if c == "b":
                if self._startswith("{"):
                    end = self.p.find("}", self.i)
                    kind = self.p[self.i + 1 : end] if end > 0 else ""
                    if kind not in _WORD_BOUNDARIES:
                        raise RustRegexError(f"unknown word boundary \\b{{{kind}}}")
                    self.i = end + 1
                    return _WORD_BOUNDARIES[kind]
                return r"\b"
            if c == "<":
                return _WORD_BOUNDARIES["start"]
            if c == ">":
                return _WORD_BOUNDARIES["end"]
        if c.isascii() and c.isalnum():
            raise RustRegexError(f"unsupported escape \\{c}")
        return re.escape(c) if c.isascii() else c

    def _codepoint(self, kind: str) -> int:
        if self._startswith("{"):
            end = self.p.find("}", self.i)
            digits = self.p[self.i + 1 : end] if end > 0 else ""
            self.i = end + 1 if end > 0 else self.i
        else:
            width = {"x": 2, "u": 4, "U": 8}[kind]
            digits = self.p[self.i : self.i + width]
            self.i += width
        try:
            value = int(digits, 16)
            chr(value)
        except (ValueError, OverflowError):
            raise RustRegexError(f"invalid \\{kind} escape: {digits!r}") from None
        return value

    def _class_body(self, flags: frozenset[str]) -> str:
        """The items of `[...]`, with the brackets consumed but not returned."""
        start = self.i
        self.i += 1  # [
        out = []
        if self._startswith("^"):
            out.append("^")
            self.i += 1
        out.append(self._class_items(flags, start))
        return "".join(out)

    def _class_items(self, flags: frozenset[str], start: int) -> str:
        out: list[str] = []
        first = True
        while True:
            if self.i >= len(self.p):
                raise RustRegexError(f"unclosed character class at offset {start}")
            if self._skip_verbose(flags):
                continue
            c = self.p[self.i]
            if c == "]" and not first:
                self.i += 1
                return "".join(out)
            first = False
            if c == "[":
                out.append(self._nested_class(flags))
            elif c == "\\":
                out.append(self._escape(in_class=True))
            elif self.p.startswith(("&&", "--", "~~"), self.i):
                raise RustRegexError(
                    f"character class set operation {self.p[self.i : self.i + 2]!r} "
                    "is not supported"
                )
            else:
                self.i += 1
                # Escaped so Python never reads a doubled one as its own future set syntax.
                out.append("\\" + c if c in "[&~|" else c)

    def _nested_class(self, flags: frozenset[str]) -> str:
        if self._startswith("[:"):
            end = self.p.find(":]", self.i + 2)
            name = self.p[self.i + 2 : end] if end > 0 else ""
            if name.startswith("^"):
                raise RustRegexError(f"negated ASCII class [:{name}:] is not supported")
            if name in _ASCII_CLASSES:
                self.i = end + 2
                return _ASCII_CLASSES[name]
        start = self.i
        if self._peek(1) == "^":
            raise RustRegexError(f"negated nested character class at offset {start}")
        self.i += 1
        return self._class_items(flags, start)


def _flag_group(old: frozenset[str], new: frozenset[str]) -> str:
    """A Python scoped-flag opener turning `old` into `new` (or a plain group)."""
    on = "".join(f for f in _PY_FLAGS if f in new and f not in old)
    off = "".join(f for f in _PY_FLAGS if f in old and f not in new)
    if not on and not off:
        return "(?:"
    return f"(?{on}{'-' + off if off else ''}:"
