"""Rust regex syntax translated to Python `re` with Rust's meaning."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grading.graders.rustregex import RustRegexError, rust_search, translate


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("done$", "done", True),
        ("done$", "done\n", False),  # Python's own `$` would match here
        ("(?m)done$", "done\nnext", True),
        ("(?m:done$)", "done\n", True),
        (r"done\z", "done\n", False),
        ("^b", "a\nb", False),
        ("(?m)^b", "a\nb", True),
        ("a(?i)b", "aB", True),
        ("a(?i)b", "AB", False),
        ("a(?i)b|c", "C", True),  # Rust keeps a mid-group flag across `|`
        ("(?i)a(?-i)b", "Ab", True),
        ("(?i)a(?-i)b", "AB", False),
        ("(x(?i)y)z", "xYz", True),
        ("(x(?i)y)z", "xYZ", False),  # the flag ends with its group
        ("(?<word>ab)+", "abab", True),
        (r"\x{263A}\u00e9\x41", "☺éA", True),
        ("[[:digit:]]+x", "123x", True),
        ("[[:alpha:][:digit:]]", "_", False),
        ("[a[0-9]]", "5", True),
        ("[]a]", "]", True),
        ("[^]a]", "]", False),
        (r"[\x{2D}z]", "-", True),
        (r"\<is\>", "this is", True),
        (r"\<is\>", "this", False),
        (r"\b{start}is", "isle", True),
        (r"\b{end-half}", "", True),
        ("(?x) git \\  log  # a comment\n", "git log", True),
        ("(?x)[a b]", " ", False),  # whitespace inside a class is ignored too
        (r"\*+", "**", True),
        ("a{2}", "aa", True),
        ("(?s)a.b", "a\nb", True),
        ("a.b", "a\nb", False),
    ],
)
def test_patterns_mean_what_they_mean_in_rust(pattern: str, text: str, matches: bool) -> None:
    assert rust_search(pattern, text) is matches


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("a(?=b)", "lookaround"),
        ("a(?!b)", "lookaround"),
        ("(?<=a)b", "lookaround"),
        ("(?<!a)b", "lookaround"),
        (r"(a)\1", "backreferences"),
        (r"(?P<x>a)(?P=x)", "backreferences"),
        (r"(?<x>a)\k<x>", "backreferences"),
        (r"\p{L}", "Unicode property"),
        (r"\PL", "Unicode property"),
        ("[a-z&&[^aeiou]]", "set operation"),
        ("[a-z--b]", "set operation"),
        ("a*+", "possessive"),
        ("(?U)a+", "swap greed"),
        ("(?>a)", "unsupported group"),
        (r"\Z", "unsupported escape"),
        ("(a", "unclosed group"),
        ("a)", "unopened group"),
        ("[a", "unclosed character class"),
        ("a\\", "lone backslash"),
    ],
)
def test_it_refuses_what_rust_or_python_cannot_mean(pattern: str, message: str) -> None:
    with pytest.raises(RustRegexError, match=message):
        translate(pattern)


# Patterns in the syntax Rust and Python share (no `$`, flags, escapes or classes with
# special cases) must mean the same after translation.
_atoms = st.sampled_from(["a", "b", "ab", ".", "[ab]", "[^a]", r"\d", r"\w", r"\s", "^", r"\b"])
_quantifiers = st.sampled_from(["", "*", "+", "?", "{1,2}", "*?"])


@st.composite
def _shared_patterns(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(st.tuples(_atoms, _quantifiers), min_size=1, max_size=5))
    body = "".join(atom + (q if atom not in ("^", r"\b") else "") for atom, q in pieces)
    if draw(st.booleans()):
        body = f"({body})|{draw(_atoms)}"
    return body


@given(_shared_patterns(), st.text(alphabet="ab1 \n_", max_size=12))
def test_shared_syntax_keeps_its_python_meaning(pattern: str, text: str) -> None:
    expected = re.search(pattern, text)
    got = re.search(translate(pattern), text)
    assert (got is None) == (expected is None)
    if expected is not None and got is not None:
        assert got.span() == expected.span()


@given(st.text(alphabet="ab\n", max_size=8))
def test_dollar_is_the_end_of_the_text(text: str) -> None:
    assert rust_search("a$", text) is text.endswith("a")


def _real_patterns(root: Path) -> list[tuple[str, str]]:
    found = []
    for evals_json in sorted(root.glob("slow-powers/*/evals/evals.json")):
        data = json.loads(evals_json.read_text())
        for case in data["evals"]:
            for assertion in case.get("assertions") or []:
                for key in ("pattern", "expect_stdout"):
                    if isinstance(assertion.get(key), str):
                        found.append(
                            (f"{evals_json.parent.parent.name}/{case['id']}", assertion[key])
                        )
            for turn in case.get("turns") or []:
                if turn.get("agent_response_matches"):
                    found.append((case["id"], turn["agent_response_matches"]))
    return found


def test_every_pattern_in_the_real_evals_translates_and_compiles(real_fixtures: Path) -> None:
    patterns = _real_patterns(real_fixtures)
    assert patterns, "the real evals hold transcript_check patterns"
    for where, pattern in patterns:
        compiled = re.compile(translate(pattern))
        assert compiled.pattern, where
    assert rust_search("git (checkout -b|switch (-c|.*--create)|branch )", "git switch -c x")
    assert rust_search("git worktree add", 'Bash {"command":"git worktree add ../wt"}')
