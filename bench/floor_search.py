"""A run's search document as the importer writes it (runs/search/index.py), for the floors.

An import writes one per run, so the least work for the same rows includes them: on SQLite
the migrated schema's FTS5 trigger indexes them, on PostgreSQL the INSERT computes the vector.
"""

from __future__ import annotations

import re
import string
from typing import Any

import orjson

#: A tool call's arguments and result are searched by their first characters (the importer's
#: TOOL_TEXT_CHARS); a conversation's text stops at MAX_CONVERSATION_CHARS.
TOOL_TEXT_CHARS = 200
MAX_CONVERSATION_CHARS = 300_000
#: The PostgreSQL vector: the text columns with their weights, punctuation read as spaces.
WEIGHTS = (
    ("final_message", "A"),
    ("prompt", "A"),
    ("evidence", "B"),
    ("notes", "B"),
    ("conversation", "C"),
)
_PUNCTUATION = str.maketrans(dict.fromkeys(string.punctuation, " "))
_PUNCTUATION_CHARS = re.compile(f"[{re.escape(string.punctuation)}]")


def without_punctuation(text: str) -> str:
    return text.translate(_PUNCTUATION) if text.isascii() else _PUNCTUATION_CHARS.sub(" ", text)


def _unescaped(escape: re.Match[str]) -> str:
    return " " if escape.group(1) in "nrt" else escape.group(1)


def _event_text(event: dict[str, Any]) -> str:
    if event.get("type", "tool_invocation") != "tool_invocation":
        return str(event.get("text") or "")
    parts = [str(event.get("name") or "")]
    for key in ("args", "result"):
        value = event.get(key)
        if value is not None:
            if not isinstance(value, str):
                value = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
                if "\\" in value:  # JSON escapes read as text: \n a space, \" a quote
                    value = re.sub(r"\\(.)", _unescaped, value)
            parts.append(value[:TOOL_TEXT_CHARS])
    return "\n".join(parts)


def search_document(
    run_id: int,
    skill_id: int,
    iteration_id: int,
    condition: str,
    status: str,
    pass_rate: float | None,
    prompt: str,
    final_message: str,
    evidence: list[str],
    events: list[dict[str, Any]],
) -> tuple[Any, ...]:
    """A run's search document as the importer writes it (no reviewer notes in the bench)."""
    if status == "errored" or pass_rate is None:
        outcome = ""
    else:
        outcome = "pass" if pass_rate >= 1 else "fail"
    conversation = "\n\n".join(_event_text(e) for e in events)[:MAX_CONVERSATION_CHARS]
    return (run_id, skill_id, iteration_id, condition, outcome, prompt, final_message,
            "\n".join(evidence), "", conversation)  # fmt: skip
