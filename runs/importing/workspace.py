"""The import workflow: paths or archives in, one transaction, a report out."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import transaction

from runs.models import EvalCase

from . import baseline, eval_magic, skill_creator
from .archives import archive_kind, extract_archive
from .definitions import parse_evals_json, read_skill_definitions
from .detect import Source, detect
from .errors import ImportFailure
from .records import EvalDefinition, SkillDefinitions
from .tree import read_tree
from .writer import ImportReport, Writer

Progress = Callable[[int, int, str], None]


class _Rollback(Exception):
    """Raised to undo a dry run after it did everything a real import would."""


def import_workspace(
    paths: list[Path | str], *, dry_run: bool = False, progress: Progress | None = None
) -> ImportReport:
    """Import every workspace, iteration, baseline and skill folder found under `paths`.

    All paths are one transaction: any bad file raises ImportFailure and nothing is saved.
    Importing the same content again skips it; changed content updates what changed.
    """
    report = ImportReport(dry_run=dry_run)
    with _materialised(paths) as roots:
        sources: list[tuple[Source, str]] = []
        for root, display in roots:
            found = detect(root)
            if not found:
                raise ImportFailure(
                    "no workspace found here (expected eval-magic iteration folders, "
                    "a promoted baseline, a skill-creator workspace or a skill folder)",
                    path=display,
                )
            sources.extend((source, _display(source.path, root, display)) for source in found)
        try:
            with transaction.atomic():
                _import_sources(sources, report, progress)
                if dry_run:
                    raise _Rollback
        except _Rollback:
            pass
    return report


def _import_sources(
    sources: list[tuple[Source, str]], report: ImportReport, progress: Progress | None
) -> None:
    writer = Writer(report)
    skills: dict[str, SkillDefinitions] = {}
    # Skill folders first: their evals.json tells what the iterations' evals were.
    for source, display in sources:
        if source.kind == "skill":
            definitions = _skill_definitions(source.path, display=display)
            for name in {definitions.skill_name, source.skill_name}:
                # Two folders for one skill (a copy without evals): the one with evals wins.
                if name not in skills or not skills[name].evals:
                    skills[name] = definitions
            writer.write_definitions(definitions)
    units = [(s, d) for s, d in sources if s.kind != "skill"]
    for done, (source, display) in enumerate(units, start=1):
        tree = read_tree(source.path, display=display)
        label = source.label if source.kind != "baseline" else ""
        if label and writer.skip_unchanged(content_hash=tree.digest(), label=label):
            if progress:
                progress(done, len(units), display)
            continue
        known = _known_definitions(source, skills)
        if source.kind == "eval-magic":
            parsed = eval_magic.read_iteration(
                tree, skill_name=source.skill_name, label=source.label, definitions=known
            )
        elif source.kind == "baseline":
            parsed = baseline.read_baseline(tree, skill_name=source.skill_name, definitions=known)
        else:
            parsed = skill_creator.read_iteration(
                tree, skill_name=source.skill_name, label=source.label, definitions=known
            )
        if parsed.skill_name in skills:
            parsed.skill_description = skills[parsed.skill_name].description
        writer.write_iteration(parsed)
        if progress:
            progress(done, len(units), display)
    writer.renumber()


def _skill_definitions(folder: Path, *, display: str) -> SkillDefinitions:
    skill_md = folder / "SKILL.md"
    evals_json = folder / "evals" / "evals.json"
    return read_skill_definitions(
        skill_md=skill_md.read_bytes() if skill_md.is_file() else None,
        evals_json=evals_json.read_bytes() if evals_json.is_file() else None,
        folder_name=folder.name,
        display=display,
    )


def _known_definitions(
    source: Source, skills: dict[str, SkillDefinitions]
) -> dict[str, EvalDefinition]:
    """The evals.json definitions an iteration is checked against, nearest first.

    A copy inside the iteration (runevals writes one) is exactly what ran; then a skill
    folder in the same import; then an evals.json beside the iteration; then the newest
    definitions imported earlier for the skill.
    """
    own = source.path / "evals.json"
    if own.is_file():
        return parse_evals_json(own.read_bytes(), display=str(own))[1]
    if source.skill_name in skills:
        return skills[source.skill_name].evals
    neighbours = [source.path.parent / "evals.json"]
    if source.kind != "baseline":
        neighbours.append(source.path.parent / "evals" / "evals.json")
    for candidate in neighbours:
        if candidate.is_file():
            return parse_evals_json(candidate.read_bytes(), display=str(candidate))[1]
    return _stored_definitions(source.skill_name)


def _stored_definitions(skill_name: str) -> dict[str, EvalDefinition]:
    """The newest evals.json definitions imported earlier for this skill."""
    latest: dict[str, EvalCase] = {}
    for case in EvalCase.objects.filter(skill__name=skill_name, origin="evals.json").order_by(
        "created_at", "pk"
    ):
        latest[case.eval_id] = case
    return {
        eval_id: EvalDefinition(
            eval_id=eval_id,
            definition=case.definition,
            origin=case.origin,
            dialect=case.dialect,
            name=case.name,
            prompt=case.prompt,
            expected_output=case.expected_output,
            assertions=case.assertions,
            skill_should_trigger=case.skill_should_trigger,
            tags=case.tags,
            weight=case.weight,
        )
        for eval_id, case in latest.items()
    }


def _display(path: Path, root: Path, display: str) -> str:
    relative = path.relative_to(root).as_posix()
    return display if relative == "." else f"{display}/{relative}"


@contextmanager
def _materialised(paths: list[Path | str]) -> Iterator[list[tuple[Path, str]]]:
    """(folder, how to name it in messages) per path, extracting archives to a temp folder."""
    temp = Path(tempfile.mkdtemp(prefix="evalsite-import-"))
    try:
        roots = []
        for index, given in enumerate(paths):
            path = Path(given)
            if not path.exists():
                raise ImportFailure("no such file or folder", path=str(given))
            if path.is_dir():
                roots.append((path, str(given).rstrip("/") or "/"))
                continue
            if archive_kind(path) is None:
                raise ImportFailure(
                    "not a folder or a .zip / .tar.gz archive of a workspace", path=str(given)
                )
            # Named after the archive so a lone iteration folder inside gets its skill's name
            # from "<skill>.zip" (an eval-magic iteration's skill is its parent folder).
            into = temp / str(index) / _archive_stem(path)
            into.mkdir(parents=True)
            root = extract_archive(
                path,
                into,
                max_bytes=settings.EVALSITE_ARCHIVE_MAX_BYTES,
                max_files=settings.EVALSITE_ARCHIVE_MAX_FILES,
            )
            roots.append((root, str(given) if root == into else f"{given}!/{root.name}"))
        yield roots
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _archive_stem(path: Path) -> str:
    name = path.name
    for suffix in (".tar.gz", ".tgz", ".zip", ".tar"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)] or "archive"
    return name
