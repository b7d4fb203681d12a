"""The role a condition plays in a comparison: the one table models, stats and charts read.

Plain Python (no Django), so that `runs.stats` stays pure and can import it.
"""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    TREATMENT = "treatment"
    CONTROL = "control"
    OTHER = "other"


#: Condition names whose role is fixed by the SPEC; anything else is "other".
CONDITION_ROLES: dict[str, Role] = {
    "with_skill": Role.TREATMENT,
    "new_skill": Role.TREATMENT,
    "without_skill": Role.CONTROL,
    "old_skill": Role.CONTROL,
}


#: eval-magic's own ordering of conditions_compared, by mode.
DEFAULT_ORDER: dict[str, list[str]] = {
    "new-skill": ["with_skill", "without_skill"],
    "revision": ["old_skill", "new_skill"],
}


def role_for_condition(name: str) -> Role:
    """The role of a condition name: treatment, control or other."""
    return CONDITION_ROLES.get(name, Role.OTHER)


def conditions_in_role(role: Role) -> frozenset[str]:
    """The condition names the SPEC gives `role`."""
    return frozenset(name for name, given in CONDITION_ROLES.items() if given is role)
