"""Writing parsed records to the database: create, update or skip, counting each."""

from __future__ import annotations

import copy
from pathlib import PurePosixPath

from django.db.models import Max
from django.utils import timezone

from runs.changes import Imported, changed
from runs.models import (
    Condition,
    EvalCase,
    IssuedNumber,
    Iteration,
    Review,
    Skill,
    SourceKind,
    role_for_condition,
)

from .checks import validity_warnings
from .columns import columns
from .detect import natural_key
from .fitting import check_counts, check_names, fit_lengths, shortened
from .records import EvalDefinition, ParsedIteration, SkillDefinitions
from .report import ImportReport
from .runwriter import write_runs


class Writer:
    """Writes skills, definitions and iterations inside the caller's transaction."""

    def __init__(self, report: ImportReport):
        self.report = report
        self.skills: dict[str, Skill] = {}
        self.known_cases: dict[tuple[int, str, str], EvalCase] = {}
        #: Definition versions already counted in the report: each once per import, so a
        #: definition several iterations share is not "unchanged" after being "created".
        self.counted_cases: set[tuple[int, str, str]] = set()
        self.touched_skills: set[int] = set()

    def skill(self, name: str, *, description: str = "", notes: str = "") -> Skill:
        skill = self.skills.get(name)
        first_sight = skill is None
        if skill is None:
            skill, created = Skill.objects.get_or_create(name=name)
            self.skills[name] = skill
            if created:
                self.report.count("skills", "created")
                first_sight = False
        edited = []
        if description and description != skill.description:
            skill.description = description
            edited.append("description")
        if notes and notes != skill.notes:
            skill.notes = notes
            edited.append("notes")
        if edited:
            skill.save(update_fields=[*edited, "updated_at"])
        if first_sight:
            self.report.count("skills", "updated" if edited else "skipped")
        return skill

    def write_definitions(self, definitions: SkillDefinitions) -> Skill:
        definitions.skill_name = check_names(
            definitions.skill_name,
            eval_ids=definitions.evals,
            conditions=(),
            path=definitions.source,
        )
        skill = self.skill(definitions.skill_name, description=definitions.description)
        for definition in definitions.evals.values():
            definition.name = shortened(definition.name, EvalCase, "name")
        self.eval_cases(skill, definitions.evals)
        changed()
        return skill

    def eval_cases(
        self, skill: Skill, definitions: dict[str, EvalDefinition]
    ) -> dict[str, EvalCase]:
        """The EvalCase row of each definition version, created where new: one query to
        find the known ones and one insert for the rest, whatever the number of evals."""
        keys = {eval_id: (skill.pk, eval_id, d.fingerprint) for eval_id, d in definitions.items()}
        unknown = [key for key in keys.values() if key not in self.known_cases]
        created: set[tuple[int, str, str]] = set()
        if unknown:
            for case in EvalCase.objects.filter(
                skill=skill,
                eval_id__in={key[1] for key in unknown},
                fingerprint__in={key[2] for key in unknown},
            ):
                self.known_cases.setdefault((skill.pk, case.eval_id, case.fingerprint), case)
            new = [
                EvalCase(skill=skill, fingerprint=key[2], **columns(definitions[key[1]], EvalCase))
                for key in unknown
                if key not in self.known_cases
            ]
            EvalCase.objects.bulk_create(new, batch_size=500)
            for case in new:
                key = (skill.pk, case.eval_id, case.fingerprint)
                self.known_cases[key] = case
                created.add(key)
        first_counted = set(keys.values()) - self.counted_cases
        self.report.count("eval definitions", "created", len(created))
        self.report.count("eval definitions", "skipped", len(first_counted - created))
        self.counted_cases |= first_counted
        return {eval_id: self.known_cases[key] for eval_id, key in keys.items()}

    def checkpoint(self) -> tuple[object, ...]:
        """What a rolled-back step must not leave behind: cached rows and counts."""
        return (
            dict(self.skills),
            dict(self.known_cases),
            set(self.counted_cases),
            set(self.touched_skills),
            copy.deepcopy(self.report.counts),
            list(self.report.notes),
            list(self.report.written),
        )

    def restore(self, saved: tuple[object, ...]) -> None:
        skills, cases, counted, touched, counts, notes, written = saved
        self.skills, self.known_cases, self.touched_skills = skills, cases, touched  # type: ignore[assignment]
        self.counted_cases = counted  # type: ignore[assignment]
        self.report.counts, self.report.notes = counts, notes  # type: ignore[assignment]
        self.report.written = written  # type: ignore[assignment]

    def skip_unchanged(self, *, skill_name: str, content_hash: str, label: str) -> bool:
        """Count and skip an iteration whose files were already imported byte for byte for
        this skill (the same files under another skill's name are that skill's results)."""
        existing = (
            Iteration.objects.filter(skill__name=skill_name, content_hash=content_hash, label=label)
            .only("pk")
            .first()
        )
        if existing is None:
            return False
        self.report.count("iterations", "skipped")
        self.report.count("runs", "skipped", existing.runs.count())
        return True

    def write_iteration(self, parsed: ParsedIteration) -> Iteration:
        parsed.skill_name = check_names(
            parsed.skill_name,
            eval_ids=[*parsed.evals, *(run.eval_id for run in parsed.runs)],
            conditions=[c.name for c in parsed.conditions],
            path=parsed.source_path,
        )
        check_counts(parsed)
        fit_lengths(parsed)
        skill = self.skill(
            parsed.skill_name, description=parsed.skill_description, notes=parsed.notes
        )
        self.touched_skills.add(skill.pk)
        existing = Iteration.objects.filter(skill=skill, source_key=parsed.source_key).first()
        if existing is not None and existing.content_hash == parsed.content_hash:
            if parsed.provenance.get("git") and parsed.provenance != existing.provenance:
                # The same files, now known from git history: keep where they came from.
                existing.provenance = parsed.provenance
                existing.save(update_fields=["provenance", "updated_at"])
                self.report.count("iterations", "updated")
                self.report.written.append(existing.pk)
                self.report.count("runs", "skipped", existing.runs.count())
                return existing
            self.report.count("iterations", "skipped")
            self.report.count("runs", "skipped", existing.runs.count())
            return existing
        if (
            existing is not None
            and existing.source_kind == SourceKind.EVAL_MAGIC
            and parsed.source_kind == SourceKind.BASELINE
        ):
            # The full workspace iteration is richer than its promoted copy: keep it.
            if parsed.notes and parsed.notes != existing.notes:
                existing.notes = parsed.notes
                existing.save(update_fields=["notes", "updated_at"])
            self.report.count("iterations", "skipped")
            self.report.count("runs", "skipped", len(parsed.runs))
            self.report.notes.append(
                f"{skill.name} baseline {parsed.label} is already imported from its workspace"
            )
            return existing

        fields = columns(
            parsed,
            Iteration,
            validity_warnings=validity_warnings(parsed),
            missing_gradings=parsed.missing_gradings,
        )
        if existing is None:
            number = IssuedNumber.objects.issue(
                Iteration, skill=skill, source_key=parsed.source_key, label=parsed.label
            )
            # Last until reorder() places it by generation time, at the end of the import.
            last = skill.iterations.aggregate(n=Max("position"))["n"] or 0
            iteration = Iteration.objects.create(
                skill=skill, number=number, position=last + 1, **fields
            )
            self.report.count("iterations", "created")
        else:
            iteration = existing
            for name, value in fields.items():
                setattr(iteration, name, value)
            iteration.save()
            self.report.count("iterations", "updated")
        self.report.written.append(iteration.pk)

        conditions = self._conditions(iteration, parsed)
        cases = self.eval_cases(skill, parsed.evals)
        written = write_runs(
            iteration, parsed.runs, conditions, cases, fresh=existing is None, report=self.report
        )
        self._reviews(parsed, written.by_relpath)
        if existing is not None:
            # The warnings were just recomputed from the files; overrides of runs the source
            # did not change still count, and must still be announced.
            Iteration.objects.filter(pk=iteration.pk).refresh_override_warnings()
        # A new iteration's runs are all in memory; a changed one keeps runs it did not
        # rewrite, so it is read back.
        in_memory = (written.created, written.graded) if existing is None else None
        changed(imported=Imported(iteration, len(parsed.runs), in_memory))
        return iteration

    def _conditions(self, iteration: Iteration, parsed: ParsedIteration) -> dict[str, Condition]:
        current = {c.name: c for c in iteration.conditions.all()}
        for pc in parsed.conditions:
            values = {
                "role": role_for_condition(pc.name),
                "position": pc.position,
                "loads_skill": pc.loads_skill,
                "skill_path": pc.skill_path,
                "staged_skill_slug": pc.staged_skill_slug,
            }
            condition = current.get(pc.name)
            if condition is None:
                current[pc.name] = Condition.objects.create(
                    iteration=iteration, name=pc.name, **values
                )
            elif any(getattr(condition, k) != v for k, v in values.items()):
                for k, v in values.items():
                    setattr(condition, k, v)
                condition.save()
        return current

    def _reviews(self, parsed: ParsedIteration, runs_by_relpath: dict[str, int]) -> None:
        if not parsed.reviews:
            return
        by_feedback_id = {}
        for relpath, run_id in runs_by_relpath.items():
            by_feedback_id[relpath.replace("/", "-")] = run_id
            # The older layout keeps eval folders under runs/; feedback names them without it.
            by_feedback_id.setdefault(relpath.removeprefix("runs/").replace("/", "-"), run_id)
        unmatched = []
        for review in parsed.reviews:
            run_id = by_feedback_id.get(review.run_relpath_key)
            if run_id is None:
                unmatched.append(review.run_relpath_key)
                continue
            _, created = Review.objects.get_or_create(
                run_id=run_id,
                source=Review.Source.FEEDBACK_JSON,
                text=review.text,
                defaults={"created_at": review.created_at or timezone.now()},
            )
            self.report.count("reviews", "created" if created else "skipped")
        if unmatched:
            self.report.notes.append(
                f"feedback.json names {len(unmatched)} run(s) not in {parsed.source_path}: "
                + ", ".join(unmatched[:3])
            )

    def reorder(self) -> None:
        """Keep each touched skill's display order (`position`: 1, 2, 3… by generation time)
        and what tells apart iterations with the same label; numbers never change."""
        for skill_id in self.touched_skills:
            iterations = list(
                Iteration.objects.filter(skill_id=skill_id).only(
                    "pk",
                    "number",
                    "position",
                    "label",
                    "label_context",
                    "source_path",
                    "generated_at",
                    "imported_at",
                    "skill_id",
                )
            )
            iterations.sort(key=generation_order)
            contexts = label_contexts(iterations)
            shifted = []
            for position, iteration in enumerate(iterations, start=1):
                context = contexts.get(iteration.pk, "")
                if (iteration.position, iteration.label_context) != (position, context):
                    iteration.position, iteration.label_context = position, context
                    shifted.append(iteration)
            if shifted:
                Iteration.objects.bulk_update(
                    shifted, ["position", "label_context"], batch_size=500
                )
                changed()


def generation_order(iteration: Iteration) -> tuple[object, ...]:
    """The display order: by generation time (unknown last), then label, then import order."""
    return (
        iteration.generated_at is None,
        iteration.generated_at or timezone.now(),
        natural_key(iteration.label),
        iteration.pk,
    )


def label_contexts(iterations: list[Iteration]) -> dict[int, str]:
    """iteration id → what tells it from the skill's other iterations with its label: the
    folder its source sat in where theirs differ, else its generation time; none for a label
    no other iteration has."""
    by_label: dict[str, list[Iteration]] = {}
    for iteration in iterations:
        by_label.setdefault(iteration.label, []).append(iteration)
    contexts: dict[int, str] = {}
    for twins in by_label.values():
        if len(twins) < 2:
            continue
        # Each source's folders, nearest first: the name at the first level where no twin's
        # folder has the same (`ws-b` of ws-b/<skill>/iteration-3, beside ws-a/<skill>/…).
        chains = [
            PurePosixPath(it.source_path.replace("\\", "/")).parent.parts[::-1][:4] for it in twins
        ]
        for iteration, chain in zip(twins, chains, strict=True):
            others = [other for other in chains if other is not chain]
            apart = next(
                (
                    name
                    for depth, name in enumerate(chain)
                    if all(len(other) <= depth or other[depth] != name for other in others)
                ),
                "",
            )
            if apart and apart != "/":
                contexts[iteration.pk] = apart[:100]
            elif iteration.generated_at is not None:
                contexts[iteration.pk] = f"{iteration.generated_at:%Y-%m-%d %H:%M}"
            else:
                contexts[iteration.pk] = f"imported {iteration.imported_at:%Y-%m-%d %H:%M}"
    return contexts
