"""Which way a change went is said by a mark and words, never by a badge's colour alone."""

from __future__ import annotations

from types import SimpleNamespace

from django.template.loader import render_to_string


def signal(mean: float, kind: str = "significant") -> str:
    delta = SimpleNamespace(signal=kind, mean=mean, n=12)
    return render_to_string("runs/_signal.html", {"delta": delta})


def test_a_significant_delta_says_its_direction_besides_its_colour() -> None:
    up, down = signal(0.2), signal(-0.2)

    assert 'class="badge good"' in up and '<span aria-hidden="true">▲</span> significant' in up
    assert '<span class="visually-hidden">, higher</span>' in up
    assert 'class="badge bad"' in down and '<span aria-hidden="true">▼</span> significant' in down
    assert '<span class="visually-hidden">, lower</span>' in down
    assert "▲" not in signal(0.2, "noise") and "▼" not in signal(-0.2, "suggestive")


def test_a_flipped_trigger_query_says_now_passes_or_now_fails() -> None:
    flip = {"query": "<b>q</b>", "should_trigger": True, "before": 0.0, "after": 1.0}
    fixed = render_to_string("runs/_trigger_flips.html", {"flips": [{**flip, "fixed": True}]})
    broken = render_to_string("runs/_trigger_flips.html", {"flips": [{**flip, "fixed": False}]})

    assert '<span aria-hidden="true">▲</span> now passes' in fixed and "now fails" not in fixed
    assert '<span aria-hidden="true">▼</span> now fails' in broken and "now passes" not in broken
    assert "&lt;b&gt;q&lt;/b&gt;" in fixed
