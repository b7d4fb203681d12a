"""What a person typed into a search box, as terms the databases are given safely.

Syntax (README, "Search"): every word must appear; `"a phrase"` must appear as written;
`-word` or `-"a phrase"` leaves out runs that have it; `word*` matches words that start so.
Case does not matter, and punctuation separates words (`page_size` is the phrase
`page size`), on both databases alike. A word is a run of letters and digits, so nothing a
person types (`"`, `*`, `NEAR`, `-`, `(`, `:`) reaches FTS5 or tsquery as an operator: each
term is rebuilt from its words, quoted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_QUERY_CHARS = 500
MAX_TERMS = 20
MAX_WORD_CHARS = 200
#: A word, as FTS5's unicode61 tokenizer and the PostgreSQL side (punctuation removed) read it.
WORD = re.compile(r"[^\W_]+")
_TERM = re.compile(r'(-?)(?:"([^"]*)"?|(\S+))')


class QueryError(ValueError):
    """A search that cannot be run; str() says why, in one line."""


@dataclass(frozen=True)
class Term:
    words: tuple[str, ...]
    prefix: bool = False
    exclude: bool = False

    def fts5(self) -> str:
        return '"' + " ".join(self.words) + '"' + ("*" if self.prefix else "")

    def tsquery(self) -> str:
        # Words are letters and digits only (WORD), so quoting them cannot break out.
        lexemes = [f"'{word}'" for word in self.words]
        if self.prefix:
            lexemes[-1] += ":*"
        return "(" + " <-> ".join(lexemes) + ")"


@dataclass(frozen=True)
class Query:
    text: str
    terms: tuple[Term, ...]

    @property
    def wanted(self) -> tuple[Term, ...]:
        return tuple(term for term in self.terms if not term.exclude)

    @property
    def excluded(self) -> tuple[Term, ...]:
        return tuple(term for term in self.terms if term.exclude)

    def fts5(self) -> str:
        """The query as an FTS5 MATCH expression: quoted phrases joined by AND and NOT."""
        wanted = " AND ".join(term.fts5() for term in self.wanted)
        if not self.excluded:
            return wanted
        return f"({wanted}) NOT ({' OR '.join(term.fts5() for term in self.excluded)})"

    def tsquery(self) -> str:
        """The query as PostgreSQL tsquery text, for `to_tsquery('simple', …)`: phrases
        (`<->`) joined by & and & !."""
        wanted = " & ".join(term.tsquery() for term in self.wanted)
        return " & ".join([wanted, *(f"!{term.tsquery()}" for term in self.excluded)])

    def highlight_pattern(self) -> re.Pattern[str]:
        """The wanted words as a regex over text as it was written (for snippets)."""
        alternatives = []
        for term in self.wanted:
            for position, word in enumerate(term.words):
                last = position == len(term.words) - 1
                ending = r"[^\W_]*" if term.prefix and last else r"(?![^\W_])"
                alternatives.append(re.escape(word) + ending)
        return re.compile(r"(?<![^\W_])(?:" + "|".join(alternatives) + ")", re.IGNORECASE)


def parse_query(text: str) -> Query:
    """The terms of a search; QueryError when there is nothing to search for."""
    text = (text or "").strip()
    if not text:
        raise QueryError('Type a word, or a "phrase" in quotes, to search for.')
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"A search is at most {MAX_QUERY_CHARS} characters.")
    terms = []
    for match in _TERM.finditer(text):
        sign, phrase, bare = match.groups()
        written = phrase if phrase is not None else bare
        words = tuple(word.lower() for word in WORD.findall(written))
        if not words:
            continue  # punctuation alone ("*", "-", '""') names nothing to find
        if any(len(word) > MAX_WORD_CHARS for word in words):
            raise QueryError(f"A word is at most {MAX_WORD_CHARS} characters.")
        prefix = phrase is None and written.endswith("*")
        terms.append(Term(words=words, prefix=prefix, exclude=sign == "-"))
    if len(terms) > MAX_TERMS:
        raise QueryError(f"A search has at most {MAX_TERMS} words or phrases.")
    query = Query(text=text, terms=tuple(terms))
    if not query.wanted:
        if query.excluded:
            raise QueryError("Say what to find, not only what to leave out (-word).")
        raise QueryError(f"“{text}” has no word to search for: letters or digits.")
    return query
