"""One colour per condition, the same on every chart, table and skill of the site.

The treatment is always the first colour and the control the second, whatever the
conditions are called; any other condition takes a colour from the rest of the palette
chosen by a hash of its name, so it keeps it from skill to skill and page to page.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from ..stats.rows import condition_role

# Okabe–Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")
ROLE_COLOURS = {"treatment": PALETTE[0], "control": PALETTE[1]}
#: What conditions of no known role draw from.
OTHERS = PALETTE[2:]


def condition_colour(name: str, role: str | None = None) -> str:
    """The condition's colour: by its role (given, else known from its name), else its name."""
    role = role or condition_role(name)
    if role in ROLE_COLOURS:
        return ROLE_COLOURS[role]
    return OTHERS[zlib.crc32(name.encode()) % len(OTHERS)]


def figure_colours(
    iterations: Iterable[Iterable[tuple[str, str | None]]],
) -> dict[str, tuple[str, str]]:
    """Condition name → (colour, dash) for a chart of iterations, each given as (name, role)s.

    Every condition keeps `condition_colour`, so with_skill (a treatment) and new_skill (the
    treatment of a revision) are both the treatment colour, as their table swatches are.
    Conditions sharing a colour that never run in one iteration are told apart by dashes;
    only when two of them run side by side (two treatments in one iteration) does the later
    one take the next free colour, so no two lines of one iteration look alike. Within a
    role, the condition seen first (in the oldest iteration) keeps the solid line.
    """
    roles: dict[str, str | None] = {}
    together: dict[str, set[str]] = {}
    for conditions in iterations:
        names = []
        for name, role in conditions:
            roles.setdefault(name, role)
            names.append(name)
        for name in names:
            together.setdefault(name, set()).update(n for n in names if n != name)
    first_seen = {name: index for index, name in enumerate(roles)}
    order = sorted(roles, key=lambda n: (_rank(roles[n] or condition_role(n)), first_seen[n]))
    colours: dict[str, str] = {}
    for name in order:
        colour = condition_colour(name, roles[name])
        taken = {colours[n] for n in together.get(name, ()) if n in colours}
        if colour in taken:
            colour = next((c for c in (*OTHERS, *PALETTE) if c not in taken), colour)
        colours[name] = colour
    styles: dict[str, tuple[str, str]] = {}
    for name in order:
        alike = sum(1 for n in styles if styles[n][0] == colours[name])
        styles[name] = (colours[name], DASHES[alike % len(DASHES)])
    return styles


#: Line styles of conditions that share a colour, in turn.
DASHES = ("solid", "dash", "dot", "dashdot")


def _rank(role: str | None) -> int:
    return {"treatment": 0, "control": 1}.get(role or "", 2)
