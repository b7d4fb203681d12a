"""What an import did: created/updated/skipped counts per kind, and what to tell the user."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

KINDS = (
    *("skills", "eval definitions", "iterations", "runs", "reviews"),
    *("trigger sets", "trigger iterations"),
)

#: How the summary line says each outcome `counts` keeps: "skipped" is what was already
#: stored exactly as found.
OUTCOME_WORDS = {
    "created": "created",
    "updated": "updated",
    "skipped": "unchanged",
    "removed": "removed",
}


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
    #: (skill, iteration label, folder, why it is that skill's) for each iteration read.
    placed: list[tuple[str, str, str, str]] = field(default_factory=list)
    #: (skill, folder) for each skill folder read.
    skill_folders: list[tuple[str, str]] = field(default_factory=list)
    #: The pks of the iterations this import created or updated (what --summary reports).
    written: list[int] = field(default_factory=list)

    def count(self, kind: str, outcome: str, n: int = 1) -> None:
        if n:
            self.counts[kind][outcome] += n

    def summary(self) -> str:
        """One line: each kind with its created / updated / unchanged (and removed) counts.

        "Unchanged" is what `counts` keeps as "skipped": already stored exactly as found,
        so left as it is. Each eval definition counts once per import, however many
        iterations share it.
        """
        parts = []
        for kind in KINDS:
            counter = self.counts[kind]
            if not counter:
                continue
            outcomes = ", ".join(
                f"{counter[o]} {OUTCOME_WORDS[o]}"
                for o in ("created", "updated", "skipped", "removed")
                if counter[o] or o != "removed"
            )
            parts.append(f"{kind}: {outcomes}")
        if not parts:
            line = "Dry run: nothing would be imported" if self.dry_run else "Nothing imported"
            if self.notes:
                line += " (" + "; ".join(self.notes) + ")"
            return line + self._tail()
        line = "; ".join(parts)
        if self.notes:
            line += " (" + "; ".join(self.notes) + ")"
        return ("Dry run, nothing saved: " if self.dry_run else "Imported ") + line + self._tail()

    def _tail(self) -> str:
        tail = ""
        if self.rejected:
            tail += f"; {len(self.rejected)} rejected"
        if self.unimported:
            tail += f"; {len(self.unimported)} folder(s) or file(s) with results not imported"
        return tail

    def plan(self, *, left_out: bool = True) -> list[str]:
        """What was found, as a tree: each skill, its folder, the iterations it gets and the
        folders they come from; then (unless not `left_out`) everything with results that is
        not imported."""
        skills: dict[str, list[str]] = {}
        for skill, folder in self.skill_folders:
            skills.setdefault(skill, []).insert(0, f"    skill folder {folder}")
        for skill, label, folder, why in self.placed:
            because = f" ({why})" if why else ""
            skills.setdefault(skill, []).append(f"    {label} <- {folder}{because}")
        lines = []
        for skill, entries in skills.items():
            lines.append(f"  {skill}")
            lines.extend(entries)
        if left_out and (self.unimported or self.rejected):
            lines.append("  not imported:")
            lines.extend(f"    {line}" for line in self.rejected + self.unimported)
        return lines

    def found(self) -> list[str]:
        """The plan without what was left out (which the page lists on its own)."""
        return self.plan(left_out=False)

    def details(self) -> list[str]:
        """The lines behind the summary's counts: each rejection, each folder left out."""
        return [f"rejected: {line}" for line in self.rejected] + [
            f"not imported: {line}" for line in self.unimported
        ]
