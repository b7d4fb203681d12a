"""What a claude-code run leaves for its iteration: skill shadows and permission denials.

Per run: `skill-shadow.json` (every other copy of the skill under test the CLI could
discover, round by round) and, in `claude-code.json`, the tool calls the CLI refused.
Per iteration: `skill_shadow_warnings` (the validity warning) and
`permission_denials_report` (eval-magic's permission-denials.json, which the importer
already turns into warnings).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..harness import Dispatch


def surface(round_: int, init: dict[str, Any]) -> dict[str, Any]:
    """What a round's CLI could discover, from its init event (as listed, duplicates kept:
    two entries of one name is what is looked for)."""
    plugins = [
        str(p.get("source") or p.get("name"))
        for p in init.get("plugins") or []
        if isinstance(p, dict) and p.get("path") != "builtin"
    ]
    return {
        "round": round_,
        "advertised_skills": [str(s) for s in init.get("skills") or []],
        "slash_commands": [str(s) for s in init.get("slash_commands") or []],
        "loaded_plugins": plugins,
    }


def skill_shadow(
    dispatch: Dispatch,
    *,
    staged: Path | None,
    surfaces: list[dict[str, Any]],
    loaded_from: list[str],
) -> dict[str, Any]:
    """skill-shadow.json: every copy of the skill under test the CLI could have loaded,
    besides the one staged here.

    A copy is a skill or command of the same name (`name`, or `<plugin-or-dir>:name`) in a
    round's init event; where the skill is staged, one plain `name` in each listing is that
    copy. A Skill call that loaded a skill of that name from another folder is a copy too.
    """
    name = dispatch.skill.name if dispatch.skill else subject_name(dispatch)
    ours = 1 if staged is not None else 0
    others: set[str] = set()
    for listed in surfaces:
        for listing in (listed["advertised_skills"], listed["slash_commands"]):
            if listing.count(name) > ours:
                others.add(name)
            others |= {entry for entry in listing if entry.endswith(f":{name}")}
    for path in loaded_from:
        loaded = Path(path)
        if loaded.name == name and (staged is None or loaded != staged.resolve()):
            others.add(f"loaded from {path}")
    return {
        "skill_name": name,
        "staged": str(staged) if staged else None,
        "other_copies": sorted(others),
        "rounds": surfaces,
    }


def subject_name(dispatch: Dispatch) -> str:
    """The skill under test's name, in a condition that stages none.

    Dispatch names it only through `skill`; the runner keeps every run's task folder in
    `<workspace>/<skill>/iteration-N/`, so the folder says it.
    """
    return str(getattr(dispatch, "skill_name", "") or dispatch.env.parent.parent.name)


def _run_files(iteration: Path, name: str) -> list[tuple[str, str, int | None, Path]]:
    """(eval id, condition, run index or None, path) of every run's `name` file."""
    found = []
    for path in sorted(iteration.glob(f"eval-*/*/{name}")) + sorted(
        iteration.glob(f"eval-*/*/run-*/{name}")
    ):
        parts = path.parent.relative_to(iteration).parts
        index = int(parts[2].removeprefix("run-")) if len(parts) == 3 else None
        found.append((parts[0].removeprefix("eval-"), parts[1], index, path))
    return found


def skill_shadow_warnings(iteration: Path) -> list[str]:
    """The iteration's skill-shadow validity warning, from its runs' skill-shadow.json.

    As eval-magic's plugin-shadow: another copy discoverable in every condition is a
    warning (both arms could load it), in some conditions only it makes the comparison
    invalid (one arm had the skill, or a second one, and the other did not).
    """
    by_condition: dict[str, list[str]] = {}
    copies: set[str] = set()
    subject = ""
    for eval_id, condition, index, path in _run_files(iteration, "skill-shadow.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        runs = by_condition.setdefault(condition, [])
        subject = data.get("skill_name") or subject
        if data.get("other_copies"):
            runs.append(f"{eval_id}/{condition}" + (f"/run-{index}" if index else ""))
            copies |= set(data["other_copies"])
    shadowed = {c: runs for c, runs in by_condition.items() if runs}
    if not shadowed:
        return []
    where = "; ".join(
        f"{c}: {len(runs)} run(s), e.g. {runs[0]}" for c, runs in sorted(shadowed.items())
    )
    found = ", ".join(sorted(copies)[:5])
    if len(shadowed) == len(by_condition):
        return [
            f"skill-shadow: another copy of {subject!r} ({found}) was discoverable in every "
            f"condition ({where}); both arms could load it besides the staged skill"
        ]
    return [
        f"skill-shadow: another copy of {subject!r} ({found}) was discoverable in "
        f"{', '.join(sorted(shadowed))} only ({where}): the comparison is invalid"
    ]


def permission_denials_report(iteration: Path, *, number: int) -> dict[str, Any] | None:
    """permission-denials.json (eval-magic's schema) from the runs' claude-code.json: the
    tool calls the CLI refused, per run; None when it refused none."""
    tasks = []
    for eval_id, condition, index, path in _run_files(iteration, "claude-code.json"):
        record = json.loads(path.read_text(encoding="utf-8"))
        denials = [
            {"tool": d["tool"], "input_keys": d["input_keys"], "guard_attributed": False}
            for round_ in record.get("rounds") or []
            for d in round_.get("permission_denials") or []
        ]
        if denials:
            task: dict[str, Any] = {"eval_id": eval_id, "condition": condition}
            if index is not None:
                task["run_index"] = index
            task.update(denial_count=len(denials), guard_attributed_count=0, denials=denials)
            tasks.append(task)
    if not tasks:
        return None
    return {
        "generated": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "iteration": number,
        "total_denials": sum(t["denial_count"] for t in tasks),
        "tasks": tasks,
    }
