"""What a runevals invocation will do: the skill, its conditions, every eval × condition × run."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from grading.sandbox import hostfiles
from grading.sandbox.hostfiles import SKILL_MD_MAX_BYTES
from runs.importing import (
    EvalDefinition,
    ImportFailure,
    parse_evals_json,
    parse_skill_md,
    read_text,
)
from runs.names import (
    InvalidName,
    shown,
    validate_condition_name,
    validate_eval_id,
    validate_skill_name,
)
from runs.untrusted_git import GitError

from .skillgit import skill_md_at
from .taskdir import FixtureError, fixture_sources


class PlanError(Exception):
    """The skill cannot be run as asked; the message says why in one line."""


@dataclass(frozen=True)
class SkillVersion:
    name: str
    description: str
    body: str
    path: str  # where the SKILL.md was read from (recorded as skill_path)


@dataclass(frozen=True)
class ConditionPlan:
    name: str
    skill: SkillVersion | None  # None: the condition loads no skill


@dataclass(frozen=True)
class EvalPlan:
    eval_id: str
    case: dict[str, Any]  # the evals.json entry, normalised (prompt, turns, responder…)
    assertions: list[dict[str, Any]]
    fixtures: list[tuple[Path, PurePosixPath]]
    runs: int
    skill_should_trigger: bool
    dialect: str


@dataclass(frozen=True)
class RunPlan:
    eval_id: str
    condition: str
    run_index: int
    multi: bool

    @property
    def relpath(self) -> str:
        """The run's folder inside the iteration (eval-magic layout)."""
        cell = f"eval-{self.eval_id}/{self.condition}"
        return f"{cell}/run-{self.run_index}" if self.multi else cell

    @property
    def env_name(self) -> str:
        suffix = f"-run-{self.run_index}" if self.multi else ""
        return f"env-{self.eval_id}-{self.condition}{suffix}"


@dataclass
class Plan:
    skill_dir: Path
    skill: SkillVersion
    mode: str
    conditions: list[ConditionPlan]
    evals: list[EvalPlan]
    agent_model: str
    judge_model: str
    baseline_label: str | None = None
    runs: list[RunPlan] = field(default_factory=list)
    #: evals.json as the importer reads it, to check the results against on import.
    definitions: dict[str, EvalDefinition] = field(default_factory=dict)

    def api_calls(self, max_calls: int) -> tuple[int, int, int]:
        """(fewest agent calls, most agent calls, judge calls) the plan will make."""
        fewest = most = judges = 0
        for run in self.runs:
            case = self.eval(run.eval_id)
            fewest += 1 + len(case.case.get("turns") or [])
            most += max_calls
            judges += sum(1 for a in case.assertions if a.get("type") == "llm_judge")
        return fewest, most, judges

    def eval(self, eval_id: str) -> EvalPlan:
        return next(e for e in self.evals if e.eval_id == eval_id)

    def condition(self, name: str) -> ConditionPlan:
        return next(c for c in self.conditions if c.name == name)

    def to_data(self) -> dict[str, Any]:
        """The plan as JSON, for workers on other machines (`Plan.from_data`).

        Paths are kept relative to the skill folder, which travels with the plan; a fixture
        from outside it could not, so that is a PlanError.
        """
        root = self.skill_dir.resolve()
        evals = []
        for case in self.evals:
            fixtures = []
            for source, destination in case.fixtures:
                try:
                    inside = source.resolve().relative_to(root)
                except ValueError:
                    raise PlanError(
                        f"{self.skill_dir} eval {case.eval_id!r}: fixture {str(destination)!r} "
                        f"is outside the skill folder ({source}); a queued run cannot take it "
                        "to another machine"
                    ) from None
                fixtures.append([inside.as_posix(), destination.as_posix()])
            evals.append({**asdict(case), "fixtures": fixtures})
        return {
            "skill": asdict(self.skill),
            "mode": self.mode,
            "conditions": [asdict(c) for c in self.conditions],
            "evals": evals,
            "agent_model": self.agent_model,
            "judge_model": self.judge_model,
            "baseline_label": self.baseline_label,
            "runs": [asdict(r) for r in self.runs],
        }

    @classmethod
    def from_data(cls, data: dict[str, Any], skill_dir: Path) -> Plan:
        """The plan `to_data` wrote, with its skill folder now at `skill_dir`."""

        def version(recorded: dict[str, Any] | None) -> SkillVersion | None:
            return SkillVersion(**recorded) if recorded else None

        evals_json = skill_dir / "evals" / "evals.json"
        try:
            _, definitions = parse_evals_json(evals_json.read_bytes(), display=str(evals_json))
        except (OSError, ImportFailure) as exc:
            raise PlanError(f"{evals_json}: {getattr(exc, 'message', exc)}") from None
        return cls(
            skill_dir=skill_dir,
            skill=SkillVersion(**data["skill"]),
            mode=data["mode"],
            conditions=[ConditionPlan(c["name"], version(c["skill"])) for c in data["conditions"]],
            evals=[
                EvalPlan(
                    **{
                        **case,
                        "fixtures": [
                            (skill_dir / source, PurePosixPath(destination))
                            for source, destination in case["fixtures"]
                        ],
                    }
                )
                for case in data["evals"]
            ],
            agent_model=data["agent_model"],
            judge_model=data["judge_model"],
            baseline_label=data["baseline_label"],
            runs=[RunPlan(**run) for run in data["runs"]],
            definitions=definitions,
        )


#: The longest file name most filesystems take (NAME_MAX), in bytes.
NAME_MAX_BYTES = 255


def check_folder_names(
    *, eval_ids: list[str], conditions: list[str], runs: int = 1, display: str = "evals.json"
) -> None:
    """PlanError unless every eval id and condition name can name the run's folders.

    Each becomes part of a path (`eval-<id>/<condition>/`, `env-<id>-<condition>-run-<k>`)
    that runevals writes, so one that is not a single plain folder name — `..`, a `/`, a
    NUL, surrounding whitespace the importer would strip, too long — would write outside
    the iteration or fail half-way through it. Refused before any API call.
    """
    for kind, names, validate in (
        ("eval id", eval_ids, validate_eval_id),
        ("condition name", conditions, validate_condition_name),
    ):
        for name in names:
            try:
                cleaned = validate(name)
            except InvalidName as exc:
                raise PlanError(f"{display}: {exc}; it must be usable as a folder name") from None
            if cleaned != name:
                raise PlanError(
                    f"{display}: {kind} {shown(name)} begins or ends with whitespace; it must "
                    "be usable as a folder name"
                )
    suffix = f"-run-{runs}" if runs > 1 else ""
    for eval_id in eval_ids:
        for condition in conditions:
            for folder in (f"eval-{eval_id}", f"env-{eval_id}-{condition}{suffix}"):
                if len(folder.encode("utf-8", errors="surrogatepass")) > NAME_MAX_BYTES:
                    raise PlanError(
                        f"{display}: eval id {shown(eval_id)} is too long for the folder name "
                        f"{shown(folder)} (at most {NAME_MAX_BYTES} bytes)"
                    )


FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n?", re.DOTALL)


def _body(text: str) -> str:
    """SKILL.md without its front matter: what the Skill tool returns."""
    return FRONT_MATTER.sub("", text, count=1)


#: Larger than any evals.json a person writes; read whole into memory.
EVALS_JSON_MAX_BYTES = 16 * 1024**2


def read_definition(path: Path, *, max_bytes: int, what: str) -> bytes:
    """A skill folder's SKILL.md or evals.json: a regular file, never through a link (the
    folder is its author's; a SKILL.md linked to a host file would go to the API and the
    database), at most `max_bytes`; PlanError naming it otherwise."""
    try:
        return hostfiles.read_whole(path.parent, path.name, max_bytes=max_bytes, what=what)
    except FileNotFoundError:
        raise PlanError(f"{path}: not found") from None
    except hostfiles.UntrustedPath as exc:
        raise PlanError(str(exc)) from None
    except OSError as exc:
        raise PlanError(f"{path}: cannot read ({exc.strerror})") from None


def check_skill_name(name: str, *, display: str) -> str:
    """The skill's name, if it can name the workspace folder `<workspace>/<name>/` and the
    staged `.claude/skills/<name>/`: the import's rule (no `/`, `..`, control characters),
    and not hidden (`.worker`, `.queue` are runevals' own folders); PlanError otherwise."""
    try:
        cleaned = validate_skill_name(name)
    except InvalidName as exc:
        raise PlanError(f"{display}: {exc}; it must be usable as a folder name") from None
    if cleaned != name or name.startswith("."):
        why = "begins with '.'" if name.startswith(".") else "begins or ends with whitespace"
        raise PlanError(f"{display}: skill name {shown(name)} {why}; it must name a folder")
    if len(name.encode("utf-8", errors="surrogatepass")) > NAME_MAX_BYTES:
        raise PlanError(f"{display}: skill name {shown(name)} is longer than a folder name")
    return name


def read_skill(skill_md: Path, *, display: str | None = None) -> SkillVersion:
    """A SKILL.md's name, description and body (the text after its front matter)."""
    shown_as = display or str(skill_md)
    data = read_definition(skill_md, max_bytes=SKILL_MD_MAX_BYTES, what="a SKILL.md")
    try:
        text = read_text(data, display=shown_as)
        name, description = parse_skill_md(text, display=shown_as)
    except ImportFailure as exc:
        raise PlanError(exc.message) from None
    name = check_skill_name(name or skill_md.parent.name, display=shown_as)
    return SkillVersion(name=name, description=description, body=_body(text), path=shown_as)


def baseline_skill(skill_dir: Path, baseline: str) -> tuple[SkillVersion, str]:
    """The old SKILL.md for revision mode, from a folder or a git ref; (version, label)."""
    folder = Path(baseline)
    if folder.is_dir():
        candidate = folder / "SKILL.md" if (folder / "SKILL.md").is_file() else folder
        if not candidate.is_file():
            raise PlanError(f"{baseline}: no SKILL.md in this baseline folder")
        return read_skill(candidate), folder.name
    # The skill's repository is its author's: read through skillgit, never `git show`.
    try:
        text = read_text(skill_md_at(skill_dir, baseline), display=f"{baseline}:SKILL.md")
        name, description = parse_skill_md(text, display=f"{baseline}:SKILL.md")
    except GitError as exc:
        raise PlanError(f"--baseline {baseline}: {exc.message}") from None
    except ImportFailure as exc:
        raise PlanError(exc.message) from None
    version = SkillVersion(name or skill_dir.name, description, _body(text), f"{baseline}:SKILL.md")
    return version, baseline


def make_plan(
    skill_dir: Path,
    *,
    mode: str = "new-skill",
    baseline: str | None = None,
    runs: int = 1,
    only: list[str] | None = None,
    agent_model: str,
    judge_model: str,
) -> Plan:
    """Read SKILL.md and evals.json (any dialect) and lay out every run; PlanError if not."""
    skill_md = skill_dir / "SKILL.md"
    evals_json = skill_dir / "evals" / "evals.json"
    if not skill_dir.is_dir() or hostfiles.entry_kind(skill_dir, "SKILL.md") is None:
        raise PlanError(f"{skill_dir}: no SKILL.md here (expected a skill folder)")
    # evals/ is the root fixtures and setup files are read beneath: a real folder.
    evals_kind = hostfiles.entry_kind(skill_dir, "evals")
    if evals_kind not in (None, "a directory"):
        raise PlanError(f"{skill_dir / 'evals'} is {evals_kind}; refused (never followed)")
    if evals_kind is None or hostfiles.entry_kind(skill_dir, "evals/evals.json") is None:
        raise PlanError(f"{skill_dir}: no evals/evals.json to run")
    skill = read_skill(skill_md)
    evals_data = read_definition(evals_json, max_bytes=EVALS_JSON_MAX_BYTES, what="evals.json")
    try:
        _, definitions = parse_evals_json(evals_data, display=str(evals_json))
    except ImportFailure as exc:
        raise PlanError(exc.message) from None

    if mode == "revision":
        if not baseline:
            raise PlanError("--mode revision needs --baseline (a folder or a git ref)")
        old, label = baseline_skill(skill_dir, baseline)
        # Staged as `.claude/skills/<name>/`: the old name is a folder name too.
        check_skill_name(old.name, display=old.path)
        conditions = [ConditionPlan("old_skill", old), ConditionPlan("new_skill", skill)]
    else:
        label = None
        conditions = [ConditionPlan("with_skill", skill), ConditionPlan("without_skill", None)]

    names = [c.name for c in conditions]
    check_folder_names(eval_ids=list(definitions), conditions=names, display=str(evals_json))
    wanted = set(only or [])
    unknown = wanted - set(definitions)
    if unknown:
        raise PlanError(
            f"--only names evals not in {evals_json}: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(definitions)})"
        )
    evals = []
    for eval_id, definition in definitions.items():
        if wanted and eval_id not in wanted:
            continue
        case = definition.definition
        try:
            fixtures = fixture_sources(
                list(case.get("files") or []),
                evals_dir=evals_json.parent,
                files_root=case.get("files_root"),
            )
        except FixtureError as exc:
            raise PlanError(f"{evals_json} eval {eval_id!r}: {exc}") from None
        evals.append(
            EvalPlan(
                eval_id=eval_id,
                case={**case, "prompt": definition.prompt},
                assertions=definition.assertions,
                fixtures=fixtures,
                runs=int(case.get("runs") or runs),
                skill_should_trigger=definition.skill_should_trigger,
                dialect=definition.dialect,
            )
        )
    for case in evals:  # with its run count: `-run-<k>` lengthens the task folder's name
        check_folder_names(
            eval_ids=[case.eval_id], conditions=names, runs=case.runs, display=str(evals_json)
        )
    plan = Plan(
        skill_dir,
        skill,
        mode,
        conditions,
        evals,
        agent_model,
        judge_model,
        label,
        definitions=definitions,
    )
    for case in evals:
        for condition in conditions:
            for index in range(1, case.runs + 1):
                plan.runs.append(RunPlan(case.eval_id, condition.name, index, case.runs > 1))
    return plan
