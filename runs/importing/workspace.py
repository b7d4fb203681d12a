"""The import workflow: paths or archives in, one transaction (or one per iteration with
`keep_going`), a report out."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction

from runs.models import EvalCase
from runs.warnings import ValidityWarning

from . import baseline, eval_magic, skill_creator
from .analyze import refresh_after_import
from .columns import record_from_row
from .definitions import read_evals_hint, read_skill_definitions
from .detect import Source, detect, workspace_folder_name
from .errors import ImportFailure
from .fitting import check_names
from .records import EvalDefinition, ParsedIteration, SkillDefinitions
from .report import ImportReport
from .roots import ImportRoot, materialised
from .shares import share_of
from .tree import read_result_file, read_tree
from .trigger_writer import write_trigger_file
from .writer import Writer

Progress = Callable[[int, int, str], None]


@dataclass
class _Unit:
    source: Source
    display: str
    root: ImportRoot


class _Rollback(Exception):
    """Raised to undo a dry run after it did everything a real import would."""


def import_workspace(
    paths: list[Path | str],
    *,
    dry_run: bool = False,
    keep_going: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import every workspace, iteration, baseline and skill folder found under `paths`.

    All paths are one transaction: any bad file raises ImportFailure and nothing is saved.
    With `keep_going`, each iteration is its own transaction instead: a bad one is listed
    in `report.rejected` and the others are imported. Importing the same content again
    skips it; changed content updates what changed.
    """
    with materialised(paths) as roots:
        return import_roots(roots, dry_run=dry_run, keep_going=keep_going, progress=progress)


def import_roots(
    roots: list[ImportRoot],
    *,
    dry_run: bool = False,
    keep_going: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import already materialised folders (see `import_workspace`)."""
    with _collector_paused():
        return _import_roots(roots, dry_run=dry_run, keep_going=keep_going, progress=progress)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the import: parsing and writing a 6,000-run
    iteration allocates millions of objects, none in cycles worth finding, and its passes
    over them cost ~1.3 s of 7 s of CPU (15 MB more at the peak). Reference counting still
    frees everything; the collector resumes after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _import_roots(
    roots: list[ImportRoot],
    *,
    dry_run: bool,
    keep_going: bool,
    progress: Progress | None,
) -> ImportReport:
    report = ImportReport(dry_run=dry_run)
    units: list[_Unit] = []
    documents: dict[Path, Any] = {}
    for root in roots:
        found = detect(root.path)
        documents.update(found.documents)
        report.unimported.extend(
            f"{_display(folder, root.path, root.display)}: {reason}"
            for folder, reason in found.skipped
        )
        units.extend(
            _Unit(source, _display(source.path, root.path, root.display), root)
            for source in found.sources
        )
    if not any(unit.source.kind != "skill" for unit in units) and report.unimported:
        raise ImportFailure("nothing imported: " + "; ".join(report.unimported))
    if not units:
        raise ImportFailure(
            "no workspace found here (expected eval-magic iteration folders, "
            "a promoted baseline, a skill-creator workspace or a skill folder)",
            path=roots[0].display if len(roots) == 1 else None,
        )
    one_transaction = dry_run or not keep_going
    try:
        # Each write ends with runs.changes.changed(), in whichever transaction holds it: with
        # keep_going an iteration's own, so what committed shows whatever stops the rest.
        with transaction.atomic() if one_transaction else nullcontext():
            _Importer(report, keep_going=keep_going, documents=documents).run(units, progress)
            if dry_run:
                raise _Rollback
    except _Rollback:
        pass
    else:
        counts = report.counts.get("runs") or {}
        refresh_after_import(counts.get("created", 0) + counts.get("updated", 0))
    return report


class _Importer:
    """One import: skill folders first (they name skills and define their evals), then
    every iteration, each linked to the definitions that sat beside it."""

    def __init__(self, report: ImportReport, *, keep_going: bool, documents: dict[Path, Any]):
        self.report = report
        #: Documents discovery parsed (benchmark.json by path): not parsed twice.
        self.documents = documents
        self.keep_going = keep_going
        self.writer = Writer(report)
        #: Skill folders' definitions by folder; None when the folder was rejected.
        self.folders: dict[Path, SkillDefinitions | None] = {}

    def run(self, units: list[_Unit], progress: Progress | None) -> None:
        for unit in units:
            if unit.source.kind == "skill":
                self._guarded(unit.display, lambda unit=unit: self._skill_folder(unit))
        iterations = [unit for unit in units if unit.source.kind not in ("skill", "triggers")]
        for done, unit in enumerate(iterations, start=1):
            self._guarded(unit.display, lambda unit=unit: self._iteration(unit))
            if progress:
                progress(done, len(iterations), unit.display)
        for unit in units:
            if unit.source.kind == "triggers":
                self._guarded(unit.display, lambda unit=unit: self._triggers(unit))
        with transaction.atomic():
            self.writer.reorder()

    def _guarded(self, display: str, step: Callable[[], None]) -> None:
        """Run one step; with keep_going, in its own transaction, a failure recorded."""
        if not self.keep_going:
            step()
            return
        saved = self.writer.checkpoint()
        try:
            with transaction.atomic():
                step()
        except ImportFailure as exc:
            self.writer.restore(saved)
            self.report.rejected.append(exc.message)

    def _skill_folder(self, unit: _Unit) -> None:
        folder = unit.source.path.resolve()
        self.folders[folder] = None
        pointed_at = unit.source.path.resolve() == unit.root.path.resolve()
        definitions = _skill_definitions(unit.source.path, display=unit.display, strict=pointed_at)
        for warning in definitions.warnings:
            self.report.notes.append(warning)
        self.report.skill_folders.append((definitions.skill_name, unit.display))
        self.writer.write_definitions(definitions)
        self.folders[folder] = definitions

    def _iteration(self, unit: _Unit) -> None:
        source = unit.source
        owner = source.skill_folder.resolve() if source.skill_folder else None
        if owner is not None and owner in self.folders and self.folders[owner] is None:
            raise ImportFailure("not imported: its skill folder was rejected", path=unit.display)
        definitions = self.folders.get(owner) if owner else None
        tree = read_tree(source.path, display=unit.display)
        if (document := self.documents.pop(source.path / "benchmark.json", None)) is not None:
            tree.parsed["benchmark.json"] = document
        hint_name, known, warnings = self._known_definitions(source, definitions)
        skill_name = _skill_name(source, definitions, hint_name)
        label = source.label if source.kind != "baseline" else ""
        self.report.placed.append((skill_name, label or "baseline", unit.display, source.why))
        # Known provenance (a commit) may be new for unchanged files: let the writer decide.
        if (
            label
            and not unit.root.provenance
            and self.writer.skip_unchanged(
                skill_name=skill_name, content_hash=tree.digest(), label=label
            )
        ):
            return
        if not known:
            known = _stored_definitions(skill_name)
        parsed = _read(
            source, tree, skill_name=skill_name, definitions=known, keep_going=self.keep_going
        )
        if source.eval_folders is not None:
            parsed = share_of(parsed, source.eval_folders, source.eval_ids)
        tree.files.clear()  # parsed: the bytes need not stay in memory while rows are written
        parsed.notices.extend(warnings)
        if definitions is not None and definitions.skill_name == skill_name:
            parsed.skill_description = definitions.description
        if unit.root.provenance:
            parsed.provenance = {**parsed.provenance, **unit.root.provenance}
        if parsed.generated_at is None:
            parsed.generated_at = unit.root.generated_at
        self.writer.write_iteration(parsed)

    def _triggers(self, unit: _Unit) -> None:
        source = unit.source
        owner = source.skill_folder.resolve() if source.skill_folder else None
        if owner is not None and owner in self.folders and self.folders[owner] is None:
            raise ImportFailure("not imported: its skill folder was rejected", path=unit.display)
        definitions = self.folders.get(owner) if owner else None
        name = _skill_name(source, definitions, source.part)
        write_trigger_file(
            skill=self.writer.skill(
                check_names(name, eval_ids=(), conditions=(), path=unit.display)
            ),
            path=source.path,
            display=unit.display,
            data=self.documents.pop(source.path)
            if source.part is None
            else self.documents[source.path],
            part=source.part,
            definitions=definitions,
            report=self.report,
            why=source.why,
        )

    def _known_definitions(
        self, source: Source, definitions: SkillDefinitions | None
    ) -> tuple[str | None, dict[str, EvalDefinition], list[ValidityWarning]]:
        """(skill_name, definitions, warnings) an iteration is checked against, nearest first.

        A copy inside the iteration (runevals writes one) is exactly what ran; then the
        skill folder it belongs to; then an evals.json beside it. None of these is a file the
        user asked to import, so an invalid one is a warning, not a rejection.
        """
        warnings: list[ValidityWarning] = []
        neighbours = [source.path.parent / "evals.json"]
        if source.kind != "baseline":
            neighbours.append(source.path.parent / "evals" / "evals.json")
        for candidate in [source.path / "evals.json", None, *neighbours]:
            if candidate is None:
                if definitions is not None and definitions.evals:
                    return None, definitions.evals, warnings
                continue
            if candidate.is_file():
                name, evals, warning = read_evals_hint(
                    read_result_file(candidate, display=str(candidate)), display=str(candidate)
                )
                if warning is None:
                    return name, evals, warnings
                warnings.append(warning)
        return None, {}, warnings


def _skill_name(source: Source, definitions: SkillDefinitions | None, hint_name: str | None) -> str:
    """The identity rule (SPEC §2, §3.6): the owning skill folder's SKILL.md `name`, then the
    skill the results name, then evals.json's `skill_name`, then what discovery fell back on
    (a benchmark's `metadata.skill_name` in the workspace, else the folder name)."""
    if definitions is not None:
        return definitions.skill_name
    return source.skill_name or hint_name or source.folder_name


def _read(
    source: Source,
    tree: Any,
    *,
    skill_name: str,
    definitions: dict[str, EvalDefinition],
    keep_going: bool = False,
) -> ParsedIteration:
    if source.kind == "eval-magic":
        return eval_magic.read_iteration(
            tree, skill_name=skill_name, label=source.label, definitions=definitions
        )
    if source.kind == "baseline":
        return baseline.read_baseline(tree, skill_name=skill_name, definitions=definitions)
    return skill_creator.read_iteration(
        tree,
        skill_name=skill_name,
        label=source.label,
        definitions=definitions,
        keep_going=keep_going,
    )


def _skill_definitions(folder: Path, *, display: str, strict: bool) -> SkillDefinitions:
    skill_md = folder / "SKILL.md"
    evals_json = folder / "evals" / "evals.json"
    return read_skill_definitions(
        skill_md=read_result_file(skill_md, display=f"{display}/SKILL.md")
        if skill_md.is_file()
        else None,
        evals_json=read_result_file(evals_json, display=f"{display}/evals/evals.json")
        if evals_json.is_file()
        else None,
        folder_name=workspace_folder_name(folder.resolve()),
        display=display,
        strict=strict,
    )


def _stored_definitions(skill_name: str) -> dict[str, EvalDefinition]:
    """The newest evals.json definitions imported earlier for this skill."""
    latest: dict[str, EvalCase] = {}
    for case in EvalCase.objects.filter(skill__name=skill_name, origin="evals.json").order_by(
        "created_at", "pk"
    ):
        latest[case.eval_id] = case
    return {eval_id: record_from_row(EvalDefinition, case) for eval_id, case in latest.items()}


def _display(path: Path, root: Path, display: str) -> str:
    relative = path.relative_to(root).as_posix()
    return display if relative == "." else f"{display}/{relative}"


__all__ = ["import_roots", "import_workspace"]
