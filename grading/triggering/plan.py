"""What a trigger campaign will do: each skill's queries, descriptions, siblings and split."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from grading.evaluating.plan import PlanError, SkillVersion, read_skill
from grading.sandbox import hostfiles
from runs.importing import ImportFailure, parse_skill_md, read_trigger_set

#: Where a skill folder keeps its trigger set, first found wins: the names SPEC §3.5 lists,
#: in evals/ and then beside SKILL.md. `{skill}` is the skill's name.
SET_FILES = (
    "trigger-eval.json",
    "trigger-evals.json",
    "triggering.json",
    "description-evals.json",
    "eval_set.json",
    "{skill}-trigger.json",
)
SET_FOLDERS = ("evals", "")
#: Larger than any trigger set a person writes; read whole into memory.
SET_MAX_BYTES = 4 * 1024**2
DEFAULT_SEED = 42
TRAIN = "train"
TEST = "test"


@dataclass(frozen=True)
class TriggerQuery:
    query: str
    should_trigger: bool
    #: With siblings staged: the skill that should load, "none" for none.
    expected: str = ""
    #: TRAIN or TEST with a holdout, else "".
    split: str = ""


@dataclass(frozen=True)
class Description:
    text: str
    #: Where it came from, as the plan prints it: "SKILL.md", "--description 2 (file.md)".
    source: str


@dataclass
class TriggerPlan:
    skill_dir: Path
    skill: SkillVersion
    set_path: Path
    queries: list[TriggerQuery]
    descriptions: list[Description]
    runs: int
    siblings: list[SkillVersion] = field(default_factory=list)
    holdout: float | None = None
    seed: int = DEFAULT_SEED

    @property
    def sessions(self) -> int:
        return len(self.descriptions) * len(self.queries) * self.runs

    def skill_under_test(self, description: Description) -> SkillVersion:
        """The skill as staged to test `description` (SKILL.md itself is never edited)."""
        return replace(self.skill, description=description.text)


def set_candidates(name: str) -> list[PurePosixPath]:
    """The trigger set files looked for in a skill folder, in order."""
    return [
        PurePosixPath(folder, file.format(skill=name)) if folder else PurePosixPath(file)
        for folder in SET_FOLDERS
        for file in SET_FILES
    ]


def find_trigger_set(skill_dir: Path, name: str) -> tuple[Path, list[dict[str, Any]]]:
    """The skill folder's trigger set: (its path, its queries); PlanError in one line when
    there is none, naming the folder and the files looked for.

    Read without following a link (the folder is its author's): a set that is a link, a
    FIFO or a folder is refused, never opened.
    """
    for relative in set_candidates(name):
        try:
            found = hostfiles.entry_kind(skill_dir, relative)
        except hostfiles.UntrustedPath as exc:  # evals/ itself is a link
            raise PlanError(str(exc)) from None
        if found is None:
            continue
        path = skill_dir / relative
        try:
            raw = hostfiles.read_whole(
                skill_dir, relative, max_bytes=SET_MAX_BYTES, what="a trigger set"
            )
            queries = read_trigger_set(raw, display=str(path), skill_name=name)
        except hostfiles.UntrustedPath as exc:
            raise PlanError(str(exc)) from None
        except ImportFailure as exc:
            raise PlanError(exc.message) from None
        except OSError as exc:
            raise PlanError(f"{path}: cannot read ({exc.strerror})") from None
        return path, queries
    looked = ", ".join(str(p) for p in set_candidates(name))
    raise PlanError(f"{skill_dir}: no trigger set (looked for {looked})")


def read_description(given: str, index: int) -> Description:
    """A --description: a file's text (a SKILL.md's description when it has front matter),
    else the text itself. The operator names the file: it is read as any option's file."""
    path = Path(given)
    try:
        is_file = "\n" not in given and path.is_file()
    except OSError:  # a description longer than a file name can be
        is_file = False
    if is_file:
        try:
            text = path.read_text(encoding="utf-8")
            _, described = parse_skill_md(text, display=given)
        except (OSError, UnicodeDecodeError) as exc:
            raise PlanError(f"--description {given}: cannot read ({exc})") from None
        except ImportFailure as exc:
            raise PlanError(exc.message) from None
        text = described or text.strip()
        source = f"--description {index} ({path.name})"
    else:
        text, source = given.strip(), f"--description {index}"
    if not text:
        raise PlanError(f"--description {given!r}: the description is empty")
    return Description(text, source)


def find_siblings(skill_dir: Path, skill: SkillVersion) -> list[SkillVersion]:
    """The other skill folders of the collection (the skill folder's parent's folders that
    hold a SKILL.md), read as the skill is; a link among them is never followed."""
    parent = skill_dir.resolve().parent
    found = []
    for entry in sorted(parent.iterdir()):
        if entry.name.startswith(".") or entry.resolve() == skill_dir.resolve():
            continue
        if hostfiles.entry_kind(parent, entry.name) != "a directory":
            continue
        if hostfiles.entry_kind(entry, "SKILL.md") is None:
            continue
        sibling = read_skill(entry / "SKILL.md")
        if sibling.name == skill.name or sibling.name in {s.name for s in found}:
            raise PlanError(f"{entry}: a second skill named {sibling.name!r} in {parent}")
        found.append(sibling)
    return found


def holdout_split(
    queries: list[TriggerQuery], *, holdout: float, seed: int = DEFAULT_SEED
) -> list[TriggerQuery]:
    """`queries` with their split: stratified by should_trigger, shuffled with `seed` as
    skill-creator's run_loop.py does, `holdout` of each class to test (at least one), and
    at least one of each class kept in train."""
    rng = random.Random(seed)
    tested: set[int] = set()
    for wanted in (True, False):
        members = [i for i, q in enumerate(queries) if q.should_trigger is wanted]
        rng.shuffle(members)
        if len(members) < 2:
            continue
        count = min(max(1, int(len(members) * holdout)), len(members) - 1)
        tested.update(members[:count])
    return [replace(q, split=TEST if i in tested else TRAIN) for i, q in enumerate(queries)]


def make_trigger_plan(
    skill_dir: Path,
    *,
    descriptions: list[str],
    runs: int,
    siblings: bool = False,
    holdout: float | None = None,
    seed: int = DEFAULT_SEED,
) -> TriggerPlan:
    """Read the skill, its trigger set and what to test; PlanError in one line if not."""
    if not skill_dir.is_dir() or hostfiles.entry_kind(skill_dir, "SKILL.md") is None:
        raise PlanError(f"{skill_dir}: no SKILL.md here (expected a skill folder)")
    skill = read_skill(skill_dir / "SKILL.md")
    set_path, rows = find_trigger_set(skill_dir, skill.name)
    tested = [read_description(text, i) for i, text in enumerate(descriptions, 1)]
    if not tested:
        if not skill.description.strip():
            raise PlanError(f"{skill_dir / 'SKILL.md'}: no description to test")
        tested = [Description(skill.description, "SKILL.md")]
    staged = find_siblings(skill_dir, skill) if siblings else []
    queries = [
        TriggerQuery(
            query=row["query"],
            should_trigger=row["should_trigger"],
            expected=_expected(row, skill.name) if siblings else "",
        )
        for row in rows
    ]
    if holdout is not None:
        queries = holdout_split(queries, holdout=holdout, seed=seed)
    return TriggerPlan(
        skill_dir=skill_dir,
        skill=skill,
        set_path=set_path,
        queries=queries,
        descriptions=tested,
        runs=runs,
        siblings=staged,
        holdout=holdout,
        seed=seed,
    )


def _expected(row: dict[str, Any], name: str) -> str:
    """The skill that should load: the set's `expected` if it names one, else this skill
    for a should-trigger query and none otherwise."""
    expected = row.get("expected")
    if isinstance(expected, str) and expected.strip():
        return expected.strip()
    return name if row["should_trigger"] else "none"


def plan_lines(plan: TriggerPlan, *, harness: str, model: str) -> list[str]:
    """A dry run's account of one skill's trigger campaign."""
    lines = [
        f"{plan.skill.name}: triggers, {len(plan.descriptions)} description(s) × "
        f"{len(plan.queries)} queries × {plan.runs} runs = {plan.sessions} sessions; "
        f"harness {harness}, model {model}; set {plan.set_path}"
    ]
    for index, description in enumerate(plan.descriptions, 1):
        lines.append(f"  description-{index} ({description.source}): {description.text[:120]}")
    positive = sum(1 for q in plan.queries if q.should_trigger)
    lines.append(f"  queries: {positive} should trigger, {len(plan.queries) - positive} should not")
    if plan.holdout is not None:
        test = sum(1 for q in plan.queries if q.split == TEST)
        lines.append(
            f"  holdout {plan.holdout:g} (seed {plan.seed}): "
            f"{len(plan.queries) - test} train, {test} test"
        )
    if plan.siblings:
        lines.append(f"  siblings staged: {', '.join(s.name for s in plan.siblings)}")
    return lines
