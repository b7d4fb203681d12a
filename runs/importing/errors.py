"""The one error the importer raises for bad input."""

from __future__ import annotations

from pathlib import Path


class ImportFailure(Exception):
    """Bad input: one line naming the file, the JSON pointer and what was expected.

    Raising it inside an import rolls the whole import back.
    """

    def __init__(self, message: str, *, path: Path | str | None = None, pointer: str | None = None):
        self.path = str(path) if path is not None else None
        self.pointer = pointer
        location = ""
        if self.path is not None:
            location = self.path
            if pointer:  # "" is the whole document: the file name says it all
                location += f" at {pointer}"
            location += ": "
        self.message = f"{location}{message}"
        super().__init__(self.message)
