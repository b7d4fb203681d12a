"""The overview's sparklines: tiny inline SVGs built only from numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence

from django.utils.safestring import SafeString, mark_safe

from .points import finite_or_none, segments


def sparkline_svg(
    values: Sequence[float | None],
    *,
    width: float = 120,
    height: float = 24,
    domain: tuple[float, float] | None = None,
) -> SafeString:
    """Return a tiny inline SVG line of values (None leaves a gap), "" for fewer than 2."""
    numbers = [finite_or_none(v) for v in values]
    if sum(v is not None for v in numbers) < 2:
        return mark_safe("")
    width, height = float(width), float(height)
    if not (width > 0 and height > 0 and math.isfinite(width + height)):
        raise ValueError("width and height must be positive numbers")
    if domain is None:
        # Deltas live in [-1, 1], rates in [0, 1]; one fixed scale per kind keeps the
        # sparklines of an overview comparable row to row.
        domain = (-1.0, 1.0) if any(v is not None and v < 0 for v in numbers) else (0.0, 1.0)
    low, high = float(domain[0]), float(domain[1])
    if not high > low:
        raise ValueError("domain must be (low, high) with low < high")
    pad = 2.0
    step = (width - 2 * pad) / (len(numbers) - 1)

    def y(value: float) -> float:
        share = (min(max(value, low), high) - low) / (high - low)
        return height - pad - share * (height - 2 * pad)

    shapes = []
    if low < 0 < high:
        shapes.append(
            f'<line x1="0" y1="{y(0):.1f}" x2="{width:g}" y2="{y(0):.1f}" '
            'stroke="currentColor" stroke-opacity="0.3" stroke-width="1"/>'
        )
    for segment in segments(numbers):
        coords = [(pad + i * step, y(v)) for i, v in segment]
        if len(coords) == 1:
            # A point between gaps has no line to draw; a dot keeps it visible.
            ((cx, cy),) = coords
            shapes.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="1.5" fill="currentColor"/>')
        else:
            path = " ".join(f"{cx:.1f},{cy:.1f}" for cx, cy in coords)
            shapes.append(
                f'<polyline points="{path}" fill="none" stroke="currentColor" '
                'stroke-width="1.5" stroke-linejoin="round" stroke-linecap="round"/>'
            )
    # Built only from the numbers above, so it is safe to render unescaped.
    return mark_safe(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sparkline" width="{width:g}" '
        f'height="{height:g}" viewBox="0 0 {width:g} {height:g}" aria-hidden="true" '
        f'focusable="false">{"".join(shapes)}</svg>'
    )
