"""What an import did: created/updated/skipped counts per kind, and what to tell the user."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

KINDS = ("skills", "eval definitions", "iterations", "runs", "reviews")


@dataclass
class ImportReport:
    """What an import did: created/updated/skipped counts per kind, plus notes for the user."""

    counts: dict[str, Counter] = field(default_factory=lambda: {k: Counter() for k in KINDS})
    notes: list[str] = field(default_factory=list)
    dry_run: bool = False
    #: One line per iteration or skill folder refused under `keep_going`.
    rejected: list[str] = field(default_factory=list)
    #: "<folder>: <reason>" for each folder holding results that the import did not read.
    unimported: list[str] = field(default_factory=list)

    def count(self, kind: str, outcome: str, n: int = 1) -> None:
        if n:
            self.counts[kind][outcome] += n

    def summary(self) -> str:
        """One line: each kind with its created/updated/skipped (and removed) counts."""
        parts = []
        for kind in KINDS:
            counter = self.counts[kind]
            if not counter:
                continue
            outcomes = ", ".join(
                f"{counter[o]} {o}"
                for o in ("created", "updated", "skipped", "removed")
                if counter[o] or o != "removed"
            )
            parts.append(f"{kind}: {outcomes}")
        line = "; ".join(parts) or "nothing to import"
        if self.notes:
            line += " (" + "; ".join(self.notes) + ")"
        if self.rejected:
            line += f"; {len(self.rejected)} rejected"
        if self.unimported:
            line += f"; {len(self.unimported)} folder(s) with results not imported"
        return ("Dry run, nothing saved: " if self.dry_run else "Imported ") + line

    def details(self) -> list[str]:
        """The lines behind the summary's counts: each rejection, each folder left out."""
        return [f"rejected: {line}" for line in self.rejected] + [
            f"not imported: {line}" for line in self.unimported
        ]
