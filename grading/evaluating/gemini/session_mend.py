"""Mend Gemini CLI's recorded sessions so that `--resume` sends each function response once.

Gemini CLI 0.61, headless, records a turn's tool calls twice: the model's message carries
each call with its `result`, and a user message after it carries the same results as
`functionResponse` parts. Resuming, the CLI turns both into the history it sends, so every
function response appears twice, which the Gemini API refuses (400: "the number of function
response parts must equal the number of function call parts"). This drops the second copy:
a user message whose parts are all function responses to calls a model message before it
already answered (by call id). Every other line is kept byte for byte.

    python3 -I session_mend.py CHATS_ROOT

rewrites every `session-*.jsonl` under CHATS_ROOT (the run's ~/.gemini/tmp). The session is
the agent's writing, so the gemini harness runs this inside the sandbox, never on the host.
Standard library only, and nothing imported from evalsite: only this file is bound in.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

#: A session larger than this is left alone (the resumed call then fails as it would).
MAX_BYTES = 64 * 1024 * 1024


def is_repeat(message: Any, answered: set[str]) -> bool:
    """Whether `message` is a user message repeating responses already recorded."""
    if not isinstance(message, dict) or message.get("type") != "user":
        return False
    parts = message.get("content")
    if not isinstance(parts, list) or not parts:
        return False
    ids = []
    for part in parts:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if not isinstance(response, dict):
            return False
        ids.append(response.get("id"))
    return all(isinstance(i, str) and i in answered for i in ids)


def note_answers(message: Any, answered: set[str]) -> None:
    """Remember the calls a model message carries with their results."""
    if isinstance(message, dict) and message.get("type") == "gemini":
        for call in message.get("toolCalls") or []:
            if isinstance(call, dict) and call.get("result") and isinstance(call.get("id"), str):
                answered.add(call["id"])


def mended_messages(messages: list[Any]) -> list[Any]:
    answered: set[str] = set()
    kept = []
    for message in messages:
        if not is_repeat(message, answered):
            kept.append(message)
        note_answers(message, answered)
    return kept


def mend(text: str) -> str:
    """The session file's text with repeated function responses left out."""
    answered: set[str] = set()
    lines = []
    for line in text.splitlines(keepends=True):
        try:
            record = json.loads(line)
        except ValueError:
            lines.append(line)
            continue
        if is_repeat(record, answered):
            continue
        note_answers(record, answered)
        replaced = record.get("$set") if isinstance(record, dict) else None
        if isinstance(replaced, dict) and isinstance(replaced.get("messages"), list):
            messages = replaced["messages"]
            kept = mended_messages(messages)
            if len(kept) != len(messages):
                line = json.dumps({**record, "$set": {**replaced, "messages": kept}}) + "\n"
            answered.clear()
            for message in kept:
                note_answers(message, answered)
        lines.append(line)
    return "".join(lines)


def main(root: Path) -> int:
    for path in sorted(root.glob("*/chats/session-*.jsonl")):
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_BYTES:
            continue
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        mended = mend(text)
        if mended != text:
            path.write_text(mended, encoding="utf-8", errors="surrogateescape")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
